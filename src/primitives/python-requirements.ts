import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import { satisfies, type Requirement } from '../registry/python-requirement.js';
import { runSubprocess, type SubprocessRequest } from './subprocess.js';

/**
 * Checks a Python tool's `config.requires` before it first runs, with the python and environment
 * (PYTHONPATH, sandbox) the tool itself runs with: importlib.metadata reads what is installed
 * there, and nothing is ever installed. A satisfied set is remembered per tool version for the
 * life of the process; a missing one is asked again on the next call, so installing the package
 * is enough to clear it.
 */

export interface RequirementSet {
  /** Tool id, version and python: what a passed check is remembered under. */
  key: string;
  tool: string;
  list: Requirement[];
}

/** How the tool would run, less its own argv and input: the check runs the same python the same way. */
export type PythonRun = Omit<SubprocessRequest, 'argv' | 'stdin' | 'timeoutMs' | 'maxOutputBytes'>;

export interface RequirementCheck {
  /** Resolves when every requirement is installed at a satisfying version; throws REQUIREMENT_MISSING saying which and how to install it. */
  check(python: string, set: RequirementSet, run: PythonRun): Promise<void>;
}

// Names arrive as argv, never as code; one JSON object comes back: name → version, or null when absent.
const SCRIPT = [
  'import sys, json',
  'from importlib import metadata',
  'found = {}',
  'for name in sys.argv[1:]:',
  '    try:',
  '        found[name] = metadata.version(name)',
  '    except metadata.PackageNotFoundError:',
  '        found[name] = None',
  'print(json.dumps(found))',
].join('\n');

const Found = z.record(z.string(), z.string().max(100).nullable());
const CHECK_TIMEOUT_MS = 15_000;
const CHECK_MAX_OUTPUT = 64 * 1024;

export function createRequirementCheck(): RequirementCheck {
  const passed = new Map<string, Promise<void>>();
  return {
    check(python, set, run) {
      const known = passed.get(set.key);
      if (known !== undefined) return known;
      const checking = checkOnce(python, set, run);
      passed.set(set.key, checking);
      // Only a pass is remembered: after `pip install` the next call checks again.
      checking.catch(() => passed.delete(set.key));
      return checking;
    },
  };
}

async function checkOnce(python: string, set: RequirementSet, run: PythonRun): Promise<void> {
  const names = set.list.map((r) => r.name);
  const result = await runSubprocess({ ...run, argv: [python, '-c', SCRIPT, ...names], timeoutMs: CHECK_TIMEOUT_MS, maxOutputBytes: CHECK_MAX_OUTPUT });
  const found = result.exitCode === 0 ? readFound(result.stdout) : undefined;
  if (found === undefined) {
    const said = result.stderr.trim().split('\n').slice(-3).join(' ').slice(0, 300);
    throw new KiwiError('REQUIREMENT_MISSING', `tool ${set.tool}: could not check its config.requires with ${python} (exit ${String(result.exitCode)}${said === '' ? '' : `: ${said}`}); it needs Python 3.8 or later`);
  }
  const missing = set.list.flatMap((r): { requirement: Requirement; found: string | null }[] => {
    const version = found[r.name];
    if (version === null || version === undefined) return [{ requirement: r, found: null }];
    return satisfies(version, r.clauses) ? [] : [{ requirement: r, found: version }];
  });
  if (missing.length === 0) return;
  const lines = missing.map(({ requirement, found: v }) => `${requirement.name} ${v === null ? 'is not installed' : `${v} is installed`}, ${requirement.text} is needed`);
  const install = `pip install ${missing.map(({ requirement }) => `'${requirement.text}'`).join(' ')}`;
  throw new KiwiError('REQUIREMENT_MISSING', `tool ${set.tool} cannot run: ${lines.join('; ')} (for ${python}); install with \`${python} -m ${install}\` and call it again`, {
    details: { missing: missing.map(({ requirement, found: v }) => ({ package: requirement.name, required: requirement.text, found: v })) },
  });
}

function readFound(stdout: string): Record<string, string | null> | undefined {
  try {
    const parsed = Found.safeParse(JSON.parse(stdout));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
