/** What `load` and `execute` hand an agent for each kind of item: plain JSON-able views and their readable text. */
import { stringify } from 'yaml';
import type { Project } from '../project/open-project.js';
import type { Directive, Knowledge, Pipeline, Tool } from '../registry/types.js';
import { parametersSchema } from '../resolver/llm-argument-filler.js';
import { directiveSteps } from '../registry/directive-steps.js';
import { pipelineShape } from '../registry/pipeline-shape.js';
import { knowledgeFields } from '../registry/item-tools.js';
import { displayPath } from './meta-common.js';

export function toolView(project: Project, tool: Tool): Record<string, unknown> {
  return {
    tool_id: tool.id,
    tool_type: tool.type,
    executor: tool.executor,
    version: tool.version,
    description: tool.description,
    mutates_state: tool.mutatesState,
    tags: tool.tags,
    examples: tool.examples,
    parameters: parametersSchema(tool.parameters),
    // As written in the manifest: `${ENV}` placeholders stay placeholders, nothing is resolved here.
    config: tool.config,
    ...(tool.requires !== undefined ? { requires: tool.requires } : {}),
    ...(tool.outputs !== undefined ? { outputs: tool.outputs } : {}),
    ...(tool.capabilities !== undefined ? { capabilities: tool.capabilities } : {}),
    source: { tier: tool.source.tier, path: displayPath(project, tool.source.path, tool.source.tier) },
  };
}

export function directiveView(project: Project, directive: Directive): Record<string, unknown> {
  return {
    name: directive.name,
    version: directive.version,
    description: directive.description,
    ...(directive.category !== undefined ? { category: directive.category } : {}),
    ...(directive.modelTier !== undefined ? { model_tier: directive.modelTier } : {}),
    limits: directive.limits,
    permissions: directive.permissions,
    inputs: directive.inputs ?? [],
    steps: directiveSteps(directive),
    signed: directive.signature !== null,
    source: { tier: directive.source.tier, path: displayPath(project, directive.source.path, directive.source.tier) },
    content: directive.body,
  };
}

/** A pipeline as its file reads: its stages in groups (a group of several runs at once), each a directive and its input templates. */
export function pipelineView(project: Project, pipeline: Pipeline): Record<string, unknown> {
  return {
    name: pipeline.name,
    version: pipeline.version,
    description: pipeline.description,
    inputs: pipeline.inputs,
    ...(pipeline.permissions !== undefined ? { permissions: pipeline.permissions } : {}),
    stages: pipeline.groups.map((group) => group.map((s) => ({ name: s.name, directive: s.directive, inputs: s.inputs, ...(s.modelTier ? { model_tier: s.modelTier } : {}) }))),
    shape: pipelineShape(pipeline),
    source: { tier: pipeline.source.tier, path: displayPath(project, pipeline.source.path, pipeline.source.tier) },
  };
}

export function knowledgeView(project: Project, entry: Knowledge): Record<string, unknown> {
  const { content, ...fields } = knowledgeFields(entry);
  // The content last: a client reads the fields before the long part.
  return { ...fields, signed: entry.signature !== null, source: { tier: entry.source.tier, path: displayPath(project, entry.source.path, entry.source.tier) }, content };
}

/** Front matter and body, as the entry reads in its file (without the signature line). */
export function knowledgeText(entry: Knowledge): string {
  const front: Record<string, unknown> = { id: entry.id, title: entry.title, entry_type: entry.entryType, version: entry.version };
  if (entry.category !== undefined) front['category'] = entry.category;
  if (entry.tags.length > 0) front['tags'] = entry.tags;
  return `---\n${stringify(front)}---\n\n${entry.body.replace(/^\n+/, '')}`;
}
