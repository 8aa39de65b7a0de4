import type { Tool } from '../../src/registry/types.js';

/** A Tool value for unit tests of code that takes plain registry types. */
export function makeTool(partial: Partial<Tool> & Pick<Tool, 'id'>): Tool {
  return {
    type: 'script',
    executor: 'subprocess',
    version: '1.0.0',
    description: `${partial.id} for tests`,
    mutatesState: true,
    requiresApproval: false,
    config: {},
    parameters: [],
    tags: [],
    examples: [],
    source: { path: `/virtual/.ai/tools/${partial.id}.yaml`, tier: 'project' },
    ...partial,
  };
}

export function toolMap(...tools: Tool[]): Map<string, Tool> {
  return new Map(tools.map((t) => [t.id, t]));
}
