/**
 * The registry for MCP clients that browse rather than call: knowledge entries as resources
 * (`kiwi://knowledge/{id}`, Markdown with their front matter) and directives as prompts (their
 * inputs as the prompt's arguments; the prompt is what `execute` answers for a directive an agent
 * follows itself). Both are read-only views of what `load` already shows; nothing runs.
 */
import { ResourceTemplate, type McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Project } from '../project/open-project.js';
import { directiveInstructions } from './meta-execute.js';
import { knowledgeText } from './meta-views.js';

const KNOWLEDGE_URI = 'kiwi://knowledge/';

export function registerRegistryViews(server: McpServer, project: Project): void {
  const { knowledge, directives } = project.registry;
  if (knowledge.size > 0) {
    server.registerResource(
      'knowledge',
      new ResourceTemplate(`${KNOWLEDGE_URI}{id}`, {
        list: async () => ({
          resources: [...knowledge.values()].map((k) => ({ uri: `${KNOWLEDGE_URI}${encodeURIComponent(k.id)}`, name: k.id, title: k.title, mimeType: 'text/markdown' })),
        }),
      }),
      { title: 'Knowledge entries', description: "This project's knowledge entries (.ai/knowledge), as Markdown with their front matter", mimeType: 'text/markdown' },
      async (uri, variables) => {
        const raw = Array.isArray(variables['id']) ? variables['id'][0] : variables['id'];
        let id = '';
        try {
          id = decodeURIComponent(raw ?? '');
        } catch {
          // a malformed escape names no entry
        }
        const entry = knowledge.get(id);
        if (entry === undefined) throw new Error(`no knowledge entry ${JSON.stringify(id.slice(0, 80))}; resources/list shows them`);
        return { contents: [{ uri: uri.href, mimeType: 'text/markdown', text: knowledgeText(entry) }] };
      },
    );
  }
  for (const directive of directives.values()) {
    const args: Record<string, z.ZodType<string> | z.ZodType<string | undefined>> = {};
    for (const input of directive.inputs ?? []) {
      // MCP prompt arguments are strings, whatever the input's type; the description says which.
      const described = `${input.description || input.type}${input.type === 'string' ? '' : ` (${input.type})`}`;
      args[input.name] = input.required ? z.string().describe(described) : z.string().optional().describe(described);
    }
    server.registerPrompt(directive.name, { title: directive.name, description: directive.description, argsSchema: args }, (given: Record<string, string | undefined>) => ({
      description: `directive ${directive.name} ${directive.version}`,
      messages: [{ role: 'user' as const, content: { type: 'text' as const, text: directiveInstructions(directive, Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined))) } }],
    }));
  }
}
