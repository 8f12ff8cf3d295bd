/**
 * Fault scenarios: a resource other than raw request capacity degrades
 * (storage, clients, device memory, the JS heap) while the server takes a
 * light, steady load, until something fails. Each scenario defines its own
 * failure (documented in `failureDefinition`) and the resources it is about;
 * alerts are judged with `judgeAlerts` from ../suite against them.
 */

/** One alert rise, on the scenario's clock, judged against the first failure. */
export interface JudgedAlert {
  signal: string;
  level: string;
  /** `queue "infer"`, `model "m"`, `device "d"`; null for a process-wide signal. */
  subject: string | null;
  atSeconds: number;
  /** Offered load when it was seen, as a multiple of the measured capacity. */
  offeredFactor: number | null;
  /**
   * `true`: about a failing resource, raised no later than the first failure (a true precursor).
   * `late`: about a failing resource, raised after it.
   * `false`: in a run where nothing failed, or about a subject that did not fail.
   * `process`: a process-wide signal (no subject) in a run that failed: neither true nor false.
   * `shedding`: the queue's shedding (`queue_backpressure`), announced by the first request it turns
   *   away: the failure itself, never its precursor.
   */
  verdict: 'true' | 'late' | 'false' | 'process' | 'shedding';
  /** What the server said about it (the alert event's message), where the sighting carried one. */
  message?: string;
}

export type FaultScenarioName = 'slow-reload' | 'stream-drops' | 'device-memory' | 'gc-pressure';

export interface FaultRunFigures {
  scenario: FaultScenarioName;
  repeat: number;
  /** What the run did, one line (e.g. "storage 1× → 5× slower over 12 reloads at 0.3× capacity"). */
  conditions: string;
  /** The resources the failure is about: `model "m"`, `queue "q"`, `device "d"`; null for the process. */
  failingSubjects: (string | null)[];
  durationSeconds: number;
  /** Seconds from the run start; null when nothing failed. */
  failureAtSeconds: number | null;
  failureDetail: string | null;
  /** Every first rise per (signal, subject, level), in order, judged against the failure. */
  alerts: JudgedAlert[];
  firstTruePrecursor: JudgedAlert | null;
  /** Seconds from the first true precursor to the first failure. */
  leadSeconds: number | null;
  falseAlerts: JudgedAlert[];
  /** The scenario's goal: a true precursor of the expected signal before the first failure, no false alert. */
  met: boolean;
}

export interface FaultRunOptions {
  /** One shortened run, as part of the test command. */
  short: boolean;
  repeat: number;
  log: (line: string) => void;
  signal?: AbortSignal;
}

export interface FaultScenario {
  name: FaultScenarioName;
  /** The signals of which one must announce this failure (`model_load`, `stream_interruptions`, …). */
  expectedSignals: readonly string[];
  /** What counts as a failure in this scenario, for docs/fidelity.md's definitions. */
  failureDefinition: string;
  /** The goal, one line, for the doc and the verdict. */
  goal: string;
  run(options: FaultRunOptions): Promise<FaultRunFigures>;
}
