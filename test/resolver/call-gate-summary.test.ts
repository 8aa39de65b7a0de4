import { describe, expect, it } from 'vitest';
import { describeCallGate } from '../../src/resolver/call-gate-summary.js';

const gates = (targetPrecision: number, callGate: number | null) => ({ threshold: 0.55, callGate, targetPrecision, calibrated: true });
const offered = [
  { precision: 0.6, threshold: 0.41 },
  { precision: 0.8, threshold: 0.57 },
];

describe("the gateway's start line on calls from plain words", () => {
  it('lists the offered targets and says that a target not offered runs nothing from plain words on the rules alone, and what happens instead', () => {
    const line = describeCallGate(gates(0.95, null), { offered, checkedPerFold: true });
    expect(line).toBe(
      "plain words: target_precision 0.95 is not offered (targets offered: 0.6, 0.8 (each held on every shipped catalog left out of fitting; `kiwi model show` prints the folds)), so no call from plain words runs on the rules' confidence alone: the agent gets the closest tools back and is asked to write the call exactly (tool {json}), which runs",
    );
    expect(describeCallGate(gates(0.95, null), { offered: [], checkedPerFold: true })).toMatch(/^plain words: target_precision 0\.95 is not offered \(targets offered: none /);
  });

  it('says that a chat asks its model where the rules stop, unless the fallback is off', () => {
    expect(describeCallGate(gates(0.95, null), { offered, checkedPerFold: true }, "the request's own model")).toMatch(
      /on the rules' confidence alone: a chat asks the request's own model in a side request and runs the call it writes once checked; elsewhere the agent is asked to write the call exactly \(tool \{json\}\)$/,
    );
    expect(describeCallGate(gates(0.8, 0.57), { offered, checkedPerFold: true }, 'the model qwen3:0.6b')).toMatch(/; below it a chat asks the model qwen3:0\.6b in a side request/);
  });

  it('names the gate of an offered target, and the offered one above a target between them', () => {
    expect(describeCallGate(gates(0.8, 0.57), { offered, checkedPerFold: true })).toMatch(/^plain words: a call from plain words runs at calibrated confidence 0\.57 and above, for target_precision 0\.8; below it .*targets offered: 0\.6, 0\.8 /);
    expect(describeCallGate(gates(0.7, 0.57), { offered, checkedPerFold: true })).toMatch(/for target_precision 0\.7 \(the gate of 0\.8, the lowest offered target above it\)/);
  });

  it('says when nothing is checked: target 0, no model, or a model without fold figures', () => {
    expect(describeCallGate(gates(0, 0), { offered, checkedPerFold: true })).toMatch(/^plain words: target_precision 0 runs every call .* unchecked/);
    expect(describeCallGate({ ...gates(0.95, 0), calibrated: false }, null)).toMatch(/^plain words: no learned confidence/);
    expect(describeCallGate(gates(0.8, 0.57), { offered, checkedPerFold: false })).toMatch(/no fold figures: rebuild it with `kiwi model train`/);
  });
});
