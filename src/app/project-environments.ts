import { readEnvironment } from '../registry/environment-folder.js';
import { pinnedItems } from '../registry/environment-pins.js';
import type { Registry } from '../registry/types.js';
import type { EnvironmentSource } from '../threads/thread-environment.js';

/** The project's `.ai/environments/`, each read when a thread starts from it and checked against the registry as loaded. */
export function projectEnvironments(root: string, registry: Registry): EnvironmentSource {
  return async (name) => {
    const env = await readEnvironment(root, name);
    const items = pinnedItems(registry, env);
    return {
      name: env.name,
      directive: items.directive,
      inputs: env.inputs,
      tools: items.tools,
      knowledge: items.knowledge,
      ...(env.modelTier === undefined ? {} : { modelTier: env.modelTier }),
      ...(env.model === undefined ? {} : { model: env.model }),
    };
  };
}
