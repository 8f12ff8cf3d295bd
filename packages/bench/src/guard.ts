import net from 'node:net';

/** Loopback hosts: the bench drives these without `allowRemote`. */
function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (net.isIPv4(host)) return host.startsWith('127.');
  if (net.isIPv6(host)) return host === '::1' || host === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(host);
  return false;
}

/** Throws unless the URL is loopback or remote targets were explicitly allowed (a load test is a weapon). */
export function assertTargetAllowed(url: URL, allowRemote: boolean | undefined, field = 'target'): void {
  if (allowRemote === true) return;
  if (!isLoopback(url.hostname)) {
    throw new Error(
      `bench: refusing to load non-loopback ${field} ${url.host}; set allowRemote: true (CLI --allow-remote) to drive a remote endpoint you own`,
    );
  }
}
