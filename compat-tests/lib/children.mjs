// Child processes (brokers, etcd) still running when this process exits are killed, so no test leaves one behind.
const live = new Set();
process.on('exit', () => {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** Kills `child` if it still runs when this process exits; forgets it once it has exited or failed to start. */
export function killOnExit(child) {
  live.add(child);
  child.once('exit', () => live.delete(child));
  child.once('error', () => {
    if (child.exitCode !== null || child.pid === undefined) live.delete(child);
  });
}
