/**
 * The token backlog of an LLM queue: prompt tokens of the requests still
 * waiting, output tokens still owed to the running ones (their max output
 * less what they produced), and the output tokens the waiting ones may ask
 * for. With the output rate the queue has been serving at, that is how
 * long its known work takes to drain.
 *
 * `max_tokens` is a bound, not a forecast: a chat client asking for 4096
 * and stopping at 300 would read as a minute of work on a healthy server.
 * The drain time counts the work the queue's own recent requests did: the
 * share of their max output that completed requests used (decayed over
 * about the last `SHARE_REQUESTS`), 1 until `SHARE_MIN` have completed.
 *
 * Plain sums kept as requests move, so a collection reads them as they are
 * and a produced token costs a few additions, no clock read and no
 * allocation. The rate is output tokens over the time at least one request
 * ran, in a ring of `BUCKETS` buckets spanning the window: an idle stretch
 * before a burst does not dilute it. Tokens gather in `pending` and go to a
 * bucket with the busy stretch they came in, when a request starts or ends
 * or the backlog is read.
 */
const BUCKETS = 10;
/** Completed requests the used share is averaged over (exponential decay), and those needed before it is used. */
const SHARE_REQUESTS = 32;
const SHARE_MIN = 8;

export class QueueTokens {
  /** Prompt tokens of the requests waiting. */
  waitingPrompt = 0;
  /** Max output tokens of the requests waiting (those that said one). */
  waitingOutput = 0;
  /** Output tokens still owed to the requests running: Σ max(0, max output − produced). */
  owed = 0;
  /** Σ max output of the requests running. */
  runningMax = 0;
  /** Decayed sums over completed requests with a max output: tokens they produced (at most their max), their max. */
  private usedSum = 0;
  private maxSum = 0;
  private completions = 0;
  private readonly tokens = new Float64Array(BUCKETS);
  private readonly busy = new Float64Array(BUCKETS);
  private readonly bucketMs: number;
  /** Index (now / bucketMs, floored) of the newest bucket. */
  private bucket = Number.NEGATIVE_INFINITY;
  /** Time (ms) up to which busy time has been counted. */
  private markedAt = Number.NaN;
  /** Output tokens produced since the last advance(). */
  private pending = 0;

  constructor(windowSeconds: number) {
    this.bucketMs = (windowSeconds * 1000) / BUCKETS;
  }

  /** Moves the ring to `now`, clearing the buckets it passed, and counts the busy time since the last mark. */
  advance(now: number, running: number): void {
    const index = Math.floor(now / this.bucketMs);
    if (index !== this.bucket) {
      const passed = index - this.bucket;
      if (passed >= BUCKETS || passed < 0) {
        this.tokens.fill(0);
        this.busy.fill(0);
      } else {
        for (let i = 1; i <= passed; i++) {
          const slot = slotOf(this.bucket + i);
          this.tokens[slot] = 0;
          this.busy[slot] = 0;
        }
      }
      this.bucket = index;
    }
    const slot = slotOf(index);
    let tokens = this.pending;
    if (running > 0 && now > this.markedAt) {
      // A stretch goes to the newest bucket with the tokens it produced: the window's sums are what the
      // rate reads. One longer than the window keeps the window's share of both.
      const elapsed = now - this.markedAt;
      const window = BUCKETS * this.bucketMs;
      if (elapsed > window) tokens *= window / elapsed;
      this.busy[slot]! += Math.min(elapsed, window);
    }
    this.tokens[slot]! += tokens;
    this.pending = 0;
    this.markedAt = now;
  }

  /** A request with a max output completed, having produced `produced` of it. */
  completed(produced: number, maxOutput: number): void {
    const keep = 1 - 1 / SHARE_REQUESTS;
    this.usedSum = this.usedSum * keep + Math.min(produced, maxOutput);
    this.maxSum = this.maxSum * keep + maxOutput;
    this.completions++;
  }

  /** Share of their max output that recent completed requests produced, in [0, 1]; 1 until enough completed. */
  usedShare(): number {
    if (this.completions < SHARE_MIN || !(this.maxSum > 0)) return 1;
    return Math.min(1, this.usedSum / this.maxSum);
  }

  /**
   * Output tokens the queue can expect to produce for what it knows now: the running requests' max
   * scaled by the used share, less what they produced (never below 0), and the waiting ones' scaled.
   */
  expectedWork(): number {
    const share = this.usedShare();
    return Math.max(0, this.owed - (1 - share) * this.runningMax) + share * this.waitingOutput;
  }

  /** `n` output tokens produced (counted in the rate at the next advance()). */
  produced(n: number): void {
    this.pending += n;
  }

  /**
   * Output tokens per second while requests ran, over the window; NaN
   * until a token was produced in it (a prefill, a stall: no rate to judge
   * by; a stuck queue is queue_age's).
   */
  rate(): number {
    let tokens = 0;
    let busy = 0;
    for (let i = 0; i < BUCKETS; i++) {
      tokens += this.tokens[i]!;
      busy += this.busy[i]!;
    }
    return tokens > 0 && busy > 0 ? tokens / (busy / 1000) : Number.NaN;
  }

  /**
   * Seconds the expected output work (expectedWork) takes at the measured
   * rate; 0 when none waits (requests being served are no backlog), NaN
   * while the rate is unknown.
   */
  drainSeconds(waiting: number): number {
    if (waiting === 0) return 0;
    const rate = this.rate();
    return Number.isNaN(rate) ? Number.NaN : this.expectedWork() / rate;
  }
}

function slotOf(index: number): number {
  return ((index % BUCKETS) + BUCKETS) % BUCKETS;
}
