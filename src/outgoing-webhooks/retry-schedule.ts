// When a failed delivery is tried again (docs/webhooks-outgoing.md, "Retries").
// The first attempt is immediate; after the n-th failed attempt the next one waits
// schedule[n - 1] seconds, jittered by up to ±10 % so receivers coming back are not hit by every
// box at once; past the schedule's end the delivery has failed.

/** The time of the next attempt after `attempts` failed ones, or null when there is none. */
export function nextAttemptAt(
  schedule: readonly number[],
  attempts: number,
  now: number,
  random: () => number = Math.random,
): number | null {
  const seconds = schedule[attempts - 1];
  if (seconds === undefined) return null;
  const jitter = 1 + (random() * 2 - 1) * 0.1;
  return now + Math.round(seconds * 1000 * jitter);
}
