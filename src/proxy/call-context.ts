import { childContext, type PermissionContext } from '../policy/permission-context.js';

/** The context a call is checked in: the proxy's, narrowed by the call's own when it has one. */
export function callContext(proxy: PermissionContext, call: PermissionContext | undefined): PermissionContext {
  return call ? intersect(proxy, call) : proxy;
}

/** A call-level context is re-rooted under the proxy's own, every link of it, so it can only narrow. */
function intersect(parent: PermissionContext, child: PermissionContext): PermissionContext {
  const links: PermissionContext[] = [];
  for (let c: PermissionContext | undefined = child; c && c !== parent; c = c.parent) links.unshift(c);
  return links.reduce((acc, link) => childContext(acc, link.rules, link.label), parent);
}
