/** Used when the source environment has no PATH at all. */
export const DEFAULT_CHILD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
export const DEFAULT_CHILD_LANG = 'C.UTF-8';
