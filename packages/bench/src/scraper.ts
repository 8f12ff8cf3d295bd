import { SCRAPED_METRICS } from './gauge-samples';
import { parseExposition, type PromSample } from './prometheus';

export interface Scraper {
  /** One more scrape now (the run ends with one, so a late alert is not missed). */
  scrapeNow(): Promise<void>;
  stop(): void;
  readonly errors: number;
}

/**
 * Scrapes a Prometheus endpoint every `intervalMs` on an unref'd timer that
 * re-arms itself after each scrape, so a slow endpoint never stacks scrapes.
 */
export function startScraper(url: string, intervalMs: number, onSamples: (samples: PromSample[]) => void): Scraper {
  let stopped = false;
  let errors = 0;
  let timer: NodeJS.Timeout | null = null;
  let inFlight: Promise<void> | null = null;

  const scrape = async (): Promise<void> => {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(Math.max(intervalMs, 1000)) });
      if (!response.ok) {
        errors++;
        await response.body?.cancel();
        return;
      }
      onSamples(parseExposition(await response.text(), SCRAPED_METRICS));
    } catch {
      errors++;
    }
  };

  const loop = (): void => {
    if (stopped) return;
    inFlight = scrape().finally(() => {
      inFlight = null;
      if (!stopped) {
        timer = setTimeout(loop, intervalMs);
        timer.unref();
      }
    });
  };
  loop();

  return {
    get errors() {
      return errors;
    },
    async scrapeNow() {
      if (inFlight) await inFlight;
      await scrape();
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
