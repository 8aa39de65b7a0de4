/** Plain types of what the registry loads. Parsing and validation live beside them; the core works on these. */
import type { StringFormat } from './string-formats.js';
import type { DirectiveHook } from '../hooks/hook-types.js';

export const TOOL_TYPES = ['primitive', 'runtime', 'mcp_server', 'mcp_tool', 'script', 'api', 'directive', 'knowledge', 'thread'] as const;
export type ToolType = (typeof TOOL_TYPES)[number];

export const PRIMITIVES = ['subprocess', 'http_client'] as const;
export type PrimitiveId = (typeof PRIMITIVES)[number];

/** `registry`: the database tier (store/registry-tier/), after the two folders. */
export type Tier = 'project' | 'user' | 'registry';

/**
 * How far a tool's process is kept from the host, lowest first: `trusted` a plain subprocess,
 * `standard` under the bubblewrap sandbox, `sandboxed` in a container, `restricted` in a
 * container without a network.
 */
export const ISOLATION_LEVELS = ['trusted', 'standard', 'sandboxed', 'restricted'] as const;
export type IsolationLevel = (typeof ISOLATION_LEVELS)[number];

export interface SourceRef {
  path: string;
  tier: Tier;
  /** Set when an agent created the item (it sits in a `created/` folder); absent, a person wrote it. */
  created?: CreatedBy;
}

/**
 * An item an agent created: what it may do is the agent's, not the project author's (no gateway
 * environment unless granted, the SSRF guard on every host it names), and it belongs to `owner`,
 * the client whose agent made it; unknown for items created before owners were kept, which only
 * an admin versions.
 */
export interface CreatedBy {
  owner?: string;
}

/** `any`: the schema says nothing usable of its type (`any`, a type it does not know, several types): any JSON value. */
export type ParameterType = 'string' | 'number' | 'integer' | 'boolean' | 'array' | 'object' | 'any';

export interface ToolParameter {
  name: string;
  type: ParameterType;
  required: boolean;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  /** Checked on every call (string-formats.ts); `path` also against the filesystem globs of the permission context. */
  format?: StringFormat;
  /** For `format: path`: whether the tool reads or writes it (default read). */
  access?: 'read' | 'write';
  /** A value substituted into argv may start with `-` only when this is set (argument injection). */
  allowFlags?: boolean;
  /** For `type: array`: the type of one item, when the schema says. */
  items?: { type: ParameterType };
  /**
   * For `type: object`: its fields as the schema names them, one level deep, all optional. Read
   * by the argument filler to build the object from its parts; calls are not checked against them.
   */
  properties?: ToolParameter[];
  /** JSON Schema bounds of a number or integer, enforced on every call. */
  minimum?: number;
  maximum?: number;
  /** JSON Schema `pattern` of a string, kept as text and matched with RE2 (string-pattern.ts); only patterns RE2 compiles are kept. */
  pattern?: string;
}

export interface Tool {
  id: string;
  type: ToolType;
  /** The tool that executes this one; null only for primitives and knowledge. */
  executor: string | null;
  version: string;
  description: string;
  /** Read-only tools (false) may be prefetched and run speculatively. Unknown means mutating. */
  mutatesState: boolean;
  /** Every call waits for a person's answer first (`requires_approval: true` in the manifest). */
  requiresApproval: boolean;
  config: Record<string, unknown>;
  parameters: ToolParameter[];
  tags: string[];
  examples: string[];
  source: SourceRef;
  /** The `# kiwi-mcp:validated:…` line, when the manifest carries one (it has then been verified). */
  signature?: Signature | null;
  /** Kiwi's `requires` (what the tool needs: packages, commands, capabilities), shown by `load`, not acted on. */
  requires?: string[] | Record<string, unknown>;
  /** Kiwi's `outputs`: a JSON Schema of the result, shown by `load`. */
  outputs?: Record<string, unknown>;
  /** Kiwi's `capabilities` of a primitive or runtime, shown by `load`. */
  capabilities?: string[];
  /** The manifest's `isolation`; absent, the chain's next link that states one decides (executor/chain.ts). */
  isolation?: IsolationLevel;
}

/** One name of a directive's `<tools>`. */
export interface DirectiveToolName {
  name: string;
  /** Where the name is written, as people read it: `.ai/directives/x.md:12:7`. */
  site: string;
  line: number;
}

/** One `<read|write|execute resource=…/>` tag of a directive's `<permissions>`. */
export interface PermissionTag {
  kind: 'read' | 'write' | 'execute';
  resource: string;
  path?: string;
  id?: string;
  action?: string;
}

export interface DirectiveLimits {
  turns?: number;
  tokens?: number;
  spawns?: number;
  duration?: number;
  spend?: number;
}

export interface DirectiveInput {
  name: string;
  type: ParameterType;
  required: boolean;
  description: string;
}


export interface Directive {
  name: string;
  version: string;
  description: string;
  category?: string;
  modelTier?: string;
  limits: DirectiveLimits;
  permissions: PermissionTag[];
  /** The `<inputs>` the directive declares, in order. */
  inputs?: DirectiveInput[];
  /** Its `<hooks>`, their conditions checked when the file loaded (directive-hooks.ts). */
  hooks?: DirectiveHook[];
  /** Its `<tools>` (directive-tools.ts): absent, its `<permissions>` alone say what its thread may call. */
  tools?: DirectiveToolName[];
  /** The XML block as written, from the first `<directive` to the last `</directive>`. */
  xml: string;
  body: string;
  signature: Signature | null;
  source: SourceRef;
}

export interface Knowledge {
  id: string;
  title: string;
  entryType: string;
  version: string;
  category?: string;
  tags: string[];
  body: string;
  signature: Signature | null;
  source: SourceRef;
}

/** The `kiwi-mcp:validated:<timestamp>:<sha256>` line. */
export interface Signature {
  timestamp: string;
  hash: string;
}

/** A file of the registry that did not load (or loaded with a part left out), and why. `message` is complete on its own (file, field, fix). */
export interface RegistryIssue {
  /** Absolute path of the file. */
  file: string;
  /** Dotted path of the offending field, e.g. `parameters[1].type`. */
  field?: string;
  line?: number;
  column?: number;
  message: string;
  kind: 'tool' | 'directive' | 'knowledge' | 'pipeline';
}

export interface ShadowedItem {
  id: string;
  kind: 'tool' | 'directive' | 'knowledge' | 'pipeline';
  winner: SourceRef;
  loser: SourceRef;
}

export interface Registry {
  tools: Map<string, Tool>;
  directives: Map<string, Directive>;
  knowledge: Map<string, Knowledge>;
  errors: RegistryIssue[];
  /** Items that loaded with a part the gateway cannot honour (a pattern RE2 cannot compile). */
  warnings: RegistryIssue[];
  shadowed: ShadowedItem[];
  /**
   * Older versions of a directive whose tier holds several files of it (an annealed directive
   * beside the one it improved), newest first; `directives` has the newest, which is what runs.
   * Absent when no directive has more than one.
   */
  olderDirectives?: Map<string, Directive[]>;
  /** `.ai/pipelines/*.yaml` (pipeline-file.ts), checked against `directives`; absent when there are none. */
  pipelines?: Map<string, Pipeline>;
}

/** A pipeline's input: a directive's, with a value used when none is given. */
export interface PipelineInput extends DirectiveInput {
  default?: unknown;
}

/** One stage: a directive run as a thread, its inputs templates (`${inputs.X}`, `${stages.NAME.result}`). */
export interface PipelineStage {
  name: string;
  directive: string;
  inputs: Record<string, string>;
  modelTier?: string;
}

/** Directives run in sequence or side by side, each stage handed what earlier ones answered. */
export interface Pipeline {
  name: string;
  version: string;
  description: string;
  inputs: PipelineInput[];
  /** Given: no stage may do more than these allow; absent: the stages' own rights only. */
  permissions?: PermissionTag[];
  /** Run one after the other; the stages of a group run at once (a plain stage is a group of one). */
  groups: PipelineStage[][];
  source: SourceRef;
}
