/**
 * Producer ids for InitProducerId, handed out from blocks that the metadata
 * store allocates (Kafka's controller hands out blocks of 1000 through
 * AllocateProducerIds; the store persists the next free id, so ids are never
 * reused across restarts, nor across brokers of one cluster).
 *
 * As Kafka's RPCProducerIdManager does, the next block is asked for once 90%
 * of the current one is handed out, so that the switch rarely waits; a
 * failed request is not repeated for 50 ms. Unlike Kafka, which answers
 * COORDINATOR_LOAD_IN_PROGRESS at once while the next block is on its way,
 * `generateProducerId` waits for that block; it fails
 * (ProducerIdsUnavailableError, which the coordinator answers as
 * COORDINATOR_LOAD_IN_PROGRESS, so clients retry) only when the store cannot
 * allocate one.
 *
 * Example: with blocks [0, 1000) then [1000, 2000): ids 0, 1, ... 999, then
 * 1000; the second block was requested when id 900 was handed out.
 */

export interface ProducerIdBlock {
  readonly firstProducerId: bigint;
  readonly size: number;
}

/** Where blocks come from: the metadata store. */
export interface ProducerIdBlockSource {
  allocateProducerIdBlock(): Promise<ProducerIdBlock>;
}

export interface ProducerIdLogger {
  warn(obj: object, msg: string): void;
}

/** No producer id can be handed out now; the client should retry. */
export class ProducerIdsUnavailableError extends Error {}

const PREFETCH_THRESHOLD = 0.9;
const RETRY_BACKOFF_MS = 50;
/** Blocks taken in one call before giving up: each new block must hold an id. */
const ITERATION_LIMIT = 3;

export class ProducerIdManager {
  private current: { next: bigint; end: bigint; prefetchAt: bigint } | null = null;
  private nextBlock: ProducerIdBlock | null = null;
  private inFlight: Promise<void> | null = null;
  private backoffUntil = 0;
  private lastId = -1n;

  constructor(
    private readonly source: ProducerIdBlockSource,
    private readonly log: ProducerIdLogger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Asks for the first block, so that the first InitProducerId need not wait. */
  start(): this {
    this.requestNextBlock();
    return this;
  }

  /**
   * The next producer id; waits for a block when none is at hand. Callers
   * that wait together share the block that comes.
   */
  async generateProducerId(): Promise<bigint> {
    for (let i = 0; i <= ITERATION_LIMIT; i++) {
      const id = this.claim();
      if (id !== null) return id;
      this.requestNextBlock();
      // Nothing on its way: the last request failed moments ago.
      if (!this.inFlight) break;
      await this.inFlight;
    }
    throw new ProducerIdsUnavailableError('no producer id block is available');
  }

  private claim(): bigint | null {
    const c = this.current;
    if (!c || c.next >= c.end) {
      if (this.nextBlock) this.useNextBlock();
      else return null;
    }
    const block = this.current!;
    if (block.next >= block.end) return null;
    const id = block.next++;
    this.lastId = id;
    if (id === block.prefetchAt) this.requestNextBlock();
    return id;
  }

  private useNextBlock(): void {
    const b = this.nextBlock;
    if (!b) return;
    this.nextBlock = null;
    this.current = {
      next: b.firstProducerId,
      end: b.firstProducerId + BigInt(b.size),
      prefetchAt: b.firstProducerId + BigInt(Math.floor(b.size * PREFETCH_THRESHOLD)),
    };
  }

  private requestNextBlock(): void {
    if (this.nextBlock || this.inFlight) return;
    if (this.now() < this.backoffUntil) return;
    this.inFlight = this.source.allocateProducerIdBlock().then(
      (block) => {
        this.inFlight = null;
        const last = this.current ? this.current.end - 1n : this.lastId;
        if (block.size <= 0 || block.firstProducerId < 0n || block.firstProducerId <= last) {
          this.log.warn({ firstProducerId: String(block.firstProducerId), size: block.size, last: String(last) }, 'refusing a producer id block that is not above the current one');
          this.backoffUntil = this.now() + RETRY_BACKOFF_MS;
          return;
        }
        this.nextBlock = block;
      },
      (err: unknown) => {
        this.inFlight = null;
        this.backoffUntil = this.now() + RETRY_BACKOFF_MS;
        this.log.warn({ err }, 'cannot allocate a block of producer ids');
      },
    );
  }
}
