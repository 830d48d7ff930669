import { describe, expect, it } from 'vitest';
import { assignTasks, type AssignorMember, type TaskSet } from './streams-assignor.js';

const tasks = (entries: Record<string, number[]>): TaskSet => new Map(Object.entries(entries).map(([s, ps]) => [s, new Set(ps)]));
const member = (memberId: string, processId: string, active: Record<string, number[]> = {}, standby: Record<string, number[]> = {}): AssignorMember => ({
  memberId,
  processId,
  active: tasks(active),
  standby: tasks(standby),
});
const flat = (t: TaskSet): string[] => [...t].flatMap(([s, ps]) => [...ps].map((p) => `${s}_${p}`)).sort();

describe('streams sticky task assignor', () => {
  it('gives every task to exactly one member, balanced within one task', () => {
    const out = assignTasks([member('a', 'p1'), member('b', 'p1'), member('c', 'p2')], [{ subtopologyId: '0', numberOfTasks: 4, stateful: false }, { subtopologyId: '1', numberOfTasks: 3, stateful: true }], 0);
    const all = [...out.values()].flatMap((a) => flat(a.active));
    expect(all.sort()).toEqual(['0_0', '0_1', '0_2', '0_3', '1_0', '1_1', '1_2']);
    const loads = [...out.values()].map((a) => flat(a.active).length).sort();
    expect(loads).toEqual([2, 2, 3]);
    for (const a of out.values()) expect([flat(a.standby), flat(a.warmup)]).toEqual([[], []]);
  });

  it('keeps tasks where they were, up to a fair share, and moves the surplus to a new member', () => {
    const out = assignTasks([member('a', 'p1', { '0': [0, 1, 2, 3] }), member('b', 'p2')], [{ subtopologyId: '0', numberOfTasks: 4, stateful: true }], 0);
    expect(flat(out.get('a')!.active)).toEqual(['0_0', '0_1']);
    expect(flat(out.get('b')!.active)).toEqual(['0_2', '0_3']);
    // Run again with that outcome as the current state: nothing moves.
    const again = assignTasks([member('a', 'p1', { '0': [0, 1] }), member('b', 'p2', { '0': [2, 3] })], [{ subtopologyId: '0', numberOfTasks: 4, stateful: true }], 0);
    expect([flat(again.get('a')!.active), flat(again.get('b')!.active)]).toEqual([['0_0', '0_1'], ['0_2', '0_3']]);
  });

  it('places standbys of stateful tasks on another process than the active, never on a stateless one', () => {
    const out = assignTasks(
      [member('a', 'p1'), member('b', 'p2')],
      [{ subtopologyId: '0', numberOfTasks: 2, stateful: false }, { subtopologyId: '1', numberOfTasks: 2, stateful: true }],
      1,
    );
    for (const [id, a] of out) {
      const other = out.get(id === 'a' ? 'b' : 'a')!;
      for (const t of flat(a.standby)) {
        expect(t.startsWith('1_')).toBe(true);
        expect(flat(other.active)).toContain(t);
      }
    }
    expect([...out.values()].flatMap((a) => flat(a.standby)).sort()).toEqual(['1_0', '1_1']);
  });

  it('gives no standby when every member is in the active task\'s process', () => {
    const out = assignTasks([member('a', 'p1'), member('b', 'p1')], [{ subtopologyId: '0', numberOfTasks: 2, stateful: true }], 2);
    expect([...out.values()].flatMap((a) => flat(a.standby))).toEqual([]);
  });

  it('assigns nothing to nobody and an empty assignment to members of a topology without tasks', () => {
    expect(assignTasks([], [{ subtopologyId: '0', numberOfTasks: 3, stateful: true }], 1).size).toBe(0);
    const out = assignTasks([member('a', 'p1')], [], 1);
    expect(flat(out.get('a')!.active)).toEqual([]);
  });
});
