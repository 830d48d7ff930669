/**
 * The sticky task assignor of streams groups (KIP-1071), the broker-side
 * assignor Kafka 4.4 uses by default ("sticky"): every task of the topology
 * goes to exactly one member as an active task, and each stateful task gets
 * up to `numStandbyReplicas` standby copies on other processes.
 *
 * Actives are balanced over members: each member gets ⌊T/M⌋ or ⌈T/M⌉ of the
 * T tasks, the larger quotas going to the members that held most before.
 * Within its quota a member keeps what it held (stickiness, so that state
 * stores stay where they are); the rest goes to the least loaded member,
 * preferring one of the process that held the task before (its state is on
 * that machine). Standbys never share a process with the task's active or
 * another of its standbys (a process keeps one copy of a store); a member
 * keeps its previous standbys where allowed, and the rest go to the least
 * loaded allowed member. A task with fewer allowed processes than replicas
 * gets fewer standbys. Warm-up tasks are not assigned.
 *
 * Deterministic: ties are broken by member id, then task order.
 */

/** subtopology id -> partitions. */
export type TaskSet = Map<string, Set<number>>;

export interface AssignorMember {
  readonly memberId: string;
  readonly processId: string;
  /** The active tasks it holds now (pending revocation included), for stickiness. */
  readonly active: TaskSet;
  readonly standby: TaskSet;
}

export interface AssignorSubtopology {
  readonly subtopologyId: string;
  readonly numberOfTasks: number;
  /** Whether it has state stores (changelog topics): only those get standbys. */
  readonly stateful: boolean;
}

export interface TaskAssignment {
  readonly active: TaskSet;
  readonly standby: TaskSet;
  readonly warmup: TaskSet;
}

const taskKey = (s: string, p: number): string => `${s}\u0000${p}`;

function add(set: TaskSet, s: string, p: number): void {
  let ps = set.get(s);
  if (!ps) set.set(s, (ps = new Set()));
  ps.add(p);
}

function has(set: TaskSet, s: string, p: number): boolean {
  return set.get(s)?.has(p) ?? false;
}

/**
 * Example: members a and b (processes pa, pb), one subtopology "0" with 4
 * tasks, a holding 0-0..0-3 before -> a keeps two of them (0-0, 0-1) and b
 * gets 0-2, 0-3. With one standby replica, a also gets standbys 0-2, 0-3 and
 * b standbys 0-0, 0-1.
 */
export function assignTasks(
  members: readonly AssignorMember[],
  subtopologies: readonly AssignorSubtopology[],
  numStandbyReplicas: number,
): Map<string, TaskAssignment> {
  const out = new Map<string, TaskAssignment>();
  const sorted = [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
  for (const m of sorted) out.set(m.memberId, { active: new Map(), standby: new Map(), warmup: new Map() });
  if (sorted.length === 0) return out;

  const tasks: { s: string; p: number; stateful: boolean }[] = [];
  for (const st of [...subtopologies].sort((a, b) => (a.subtopologyId < b.subtopologyId ? -1 : a.subtopologyId > b.subtopologyId ? 1 : 0))) {
    for (let p = 0; p < st.numberOfTasks; p++) tasks.push({ s: st.subtopologyId, p, stateful: st.stateful });
  }

  // ---- actives
  const byId = new Map(sorted.map((m) => [m.memberId, m]));
  const previousOwner = new Map<string, AssignorMember>();
  const previousCount = new Map<string, number>();
  for (const m of sorted) {
    let n = 0;
    for (const [s, ps] of m.active) for (const p of ps) {
      const k = taskKey(s, p);
      // A task claimed by two members (one still revoking it) stays with the first by member id.
      if (!previousOwner.has(k)) {
        previousOwner.set(k, m);
        n++;
      }
    }
    previousCount.set(m.memberId, n);
  }
  const base = Math.floor(tasks.length / sorted.length);
  let extra = tasks.length % sorted.length;
  const quota = new Map<string, number>();
  const byPrevious = [...sorted].sort((a, b) => previousCount.get(b.memberId)! - previousCount.get(a.memberId)! || (a.memberId < b.memberId ? -1 : 1));
  for (const m of byPrevious) quota.set(m.memberId, base + (extra-- > 0 ? 1 : 0));
  const load = new Map(sorted.map((m) => [m.memberId, 0]));
  const unassigned: typeof tasks = [];
  for (const t of tasks) {
    const owner = previousOwner.get(taskKey(t.s, t.p));
    if (owner && load.get(owner.memberId)! < quota.get(owner.memberId)!) {
      add(out.get(owner.memberId)!.active, t.s, t.p);
      load.set(owner.memberId, load.get(owner.memberId)! + 1);
    } else unassigned.push(t);
  }
  for (const t of unassigned) {
    const ownerProcess = previousOwner.get(taskKey(t.s, t.p))?.processId;
    let best: AssignorMember | null = null;
    for (const m of sorted) {
      const room = quota.get(m.memberId)! - load.get(m.memberId)!;
      if (room <= 0) continue;
      if (best === null) {
        best = m;
        continue;
      }
      const bestRoom = quota.get(best.memberId)! - load.get(best.memberId)!;
      const sameProcess = ownerProcess !== undefined && m.processId === ownerProcess;
      const bestSameProcess = ownerProcess !== undefined && best.processId === ownerProcess;
      if ((sameProcess && !bestSameProcess) || (sameProcess === bestSameProcess && room > bestRoom)) best = m;
    }
    // Quotas add up to the number of tasks, so some member always has room.
    add(out.get(best!.memberId)!.active, t.s, t.p);
    load.set(best!.memberId, load.get(best!.memberId)! + 1);
  }

  // ---- standbys
  if (numStandbyReplicas <= 0) return out;
  const activeProcess = new Map<string, string>();
  for (const [id, a] of out) for (const [s, ps] of a.active) for (const p of ps) activeProcess.set(taskKey(s, p), byId.get(id)!.processId);
  const totalLoad = new Map(sorted.map((m) => [m.memberId, load.get(m.memberId)!]));
  for (const t of tasks) {
    if (!t.stateful) continue;
    const k = taskKey(t.s, t.p);
    const processes = new Set<string>([activeProcess.get(k)!]);
    for (let r = 0; r < numStandbyReplicas; r++) {
      const allowed = sorted.filter((m) => !processes.has(m.processId));
      if (allowed.length === 0) break;
      const previous = allowed.filter((m) => has(m.standby, t.s, t.p));
      const pool = previous.length > 0 ? previous : allowed;
      let best = pool[0]!;
      for (const m of pool) if (totalLoad.get(m.memberId)! < totalLoad.get(best.memberId)!) best = m;
      add(out.get(best.memberId)!.standby, t.s, t.p);
      totalLoad.set(best.memberId, totalLoad.get(best.memberId)! + 1);
      processes.add(best.processId);
    }
  }
  return out;
}
