import { afterEach, describe, expect, it } from 'vitest';
import { ManualGroupTimer, SystemGroupTimer } from './timer.js';

const timers: SystemGroupTimer[] = [];
afterEach(() => {
  for (const t of timers.splice(0)) t.cancelAll();
});

describe('ManualGroupTimer', () => {
  it('runs due tasks in deadline order as the clock advances, including ones they schedule', () => {
    const t = new ManualGroupTimer(0);
    const ran: string[] = [];
    t.schedule('b', 20, () => ran.push(`b@${t.now()}`));
    t.schedule('a', 10, () => {
      ran.push(`a@${t.now()}`);
      t.schedule('c', 5, () => ran.push(`c@${t.now()}`));
    });
    t.advance(9);
    expect(ran).toEqual([]);
    t.advance(11);
    expect(ran).toEqual(['a@10', 'c@15', 'b@20']);
    expect(t.now()).toBe(20);
  });

  it('replaces a key\'s task when scheduled again, and forgets cancelled ones', () => {
    const t = new ManualGroupTimer(0);
    const ran: string[] = [];
    t.schedule('k', 10, () => ran.push('first'));
    t.schedule('k', 30, () => ran.push('second'));
    t.schedule('x', 5, () => ran.push('x'));
    t.cancel('x');
    t.advance(20);
    expect(ran).toEqual([]);
    t.advance(10);
    expect(ran).toEqual(['second']);
    t.cancelAll();
    t.schedule('late', 0, () => ran.push('late'));
    t.advance(1);
    expect(ran).toEqual(['second']);
  });
});

describe('SystemGroupTimer', () => {
  it('runs a task once, and clears everything on cancelAll', async () => {
    const t = new SystemGroupTimer();
    timers.push(t);
    let runs = 0;
    t.schedule('k', 5, () => runs++);
    t.schedule('never', 60_000, () => runs++);
    expect(t.size).toBe(2);
    await new Promise((r) => setTimeout(r, 30));
    expect(runs).toBe(1);
    expect(t.isScheduled('k')).toBe(false);
    t.cancelAll();
    expect(t.size).toBe(0);
    t.schedule('after', 0, () => runs++);
    await new Promise((r) => setTimeout(r, 10));
    expect(runs).toBe(1);
  });
});
