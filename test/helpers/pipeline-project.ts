import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { allowTools } from './demo-project.js';
import { addSlowTool } from './slow-tool.js';

/**
 * A copy of the demo project made ready for pipeline tests, on the offline demo model (every
 * tier maps to it), which answers each test directive with its recorded turns:
 *
 *   slow_step    calls wait_for_batch, which never finishes on its own
 *   give_up      escalates (`help escalate`): its thread ends `escalated`
 *   read_readme  calls read_file, which its directive allows
 *   gated        calls wait_for_gate, which finishes once the file `gate.open` exists beside it
 *
 * and the pipelines below. Returns where the gate tool writes its pid and where its gate is.
 */
export function preparePipelineProject(root: string): { gate: string } {
  addSlowTool(root);
  const tools = path.join(root, '.ai', 'tools', 'project');
  writeFileSync(
    path.join(tools, 'gate.mjs'),
    "import { existsSync } from 'node:fs';\nconst gate = new URL('./gate.open', import.meta.url);\nconst timer = setInterval(() => { if (existsSync(gate)) { clearInterval(timer); process.stdout.write('the gate is open'); } }, 20);\n",
  );
  writeFileSync(path.join(tools, 'wait_for_gate.yaml'), 'tool_id: wait_for_gate\ntool_type: script\nexecutor: node_runtime\nversion: "1.0.0"\ndescription: "Wait until the gate opens"\nconfig:\n  script: gate.mjs\nparameters: []\n');
  allowTools(root, ['wait_for_gate']);

  const node = '<execute resource="shell" action="node"/>';
  const directives: Record<string, string> = {
    slow_step: `<execute resource="tool" id="wait_for_batch"/>${node}`,
    give_up: '',
    read_readme: `<execute resource="tool" id="read_file"/><read resource="filesystem" path="**"/>${node}`,
    gated: `<execute resource="tool" id="wait_for_gate"/>${node}`,
  };
  for (const [name, permissions] of Object.entries(directives)) {
    const xml = `<directive name="${name}" version="1.0.0">\n  <metadata>\n    <description>${name}</description>\n    <permissions>${permissions}</permissions>\n  </metadata>\n  <process><step name="go"><description>Go</description></step></process>\n</directive>`;
    writeFileSync(path.join(root, '.ai', 'directives', `${name}.md`), `# ${name}\n\n\`\`\`xml\n${xml}\n\`\`\`\n`);
  }
  const turns = path.join(root, '.ai', 'demo', 'agent-turns.yaml');
  const recorded = [
    ['slow_step', '[TOOL: wait_for_batch {}]'],
    ['give_up', '[TOOL: help escalate: a person must decide]'],
    ['read_readme', '[TOOL: read_file {"path": "README.md"}]'],
    ['gated', '[TOOL: wait_for_gate {}]'],
  ].map(([name, turn]) => `  - name: ${name}-thread\n    match: [directive ${name}]\n    turns: ['${turn}']\n`);
  writeFileSync(turns, readFileSync(turns, 'utf8').replace(/^conversations:\n/mu, `conversations:\n${recorded.join('')}`));

  const pipelines = path.join(root, '.ai', 'pipelines');
  const head = (name: string): string => `name: ${name}\nversion: "1.0.0"\ndescription: ${name}\n`;
  const note = (stage: string, review: string): string => `{ name: ${stage}, directive: release_note, inputs: { review: "${review}" } }`;
  writeFileSync(path.join(pipelines, 'handoff.yaml'), `${head('handoff')}inputs: [{ name: topic, required: true }]\nstages:\n  - parallel:\n      - ${note('a', 'first on ${inputs.topic}')}\n      - ${note('b', 'second')}\n  - ${note('c', 'A said: ${stages.a.result} / B ${stages.b.status}')}\n`);
  writeFileSync(path.join(pipelines, 'stops.yaml'), `${head('stops')}stages:\n  - parallel:\n      - { name: slow, directive: slow_step }\n      - { name: quit, directive: give_up }\n  - ${note('after', 'never')}\n`);
  writeFileSync(path.join(pipelines, 'held.yaml'), `${head('held')}stages:\n  - { name: slow, directive: slow_step }\n  - ${note('after', 'never')}\n`);
  writeFileSync(path.join(pipelines, 'narrow.yaml'), `${head('narrow')}permissions:\n  - execute: { resource: tool, id: git_status }\n  - execute: { resource: shell, action: node }\nstages:\n  - { name: words, directive: read_readme }\n  - ${note('after', 'never')}\n`);
  writeFileSync(path.join(pipelines, 'wide.yaml'), `${head('wide')}stages:\n  - { name: words, directive: read_readme }\n`);
  writeFileSync(path.join(pipelines, 'gated_run.yaml'), `${head('gated_run')}stages:\n  - ${note('first', 'x')}\n  - { name: gate, directive: gated }\n`);
  writeFileSync(path.join(root, '.ai', 'config', 'gateway.yaml'), 'upstreams: []\nmodel_tiers: { default: kiwi-demo }\n');
  return { gate: path.join(tools, 'gate.open') };
}
