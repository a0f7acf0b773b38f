/**
 * The barrier unit tests use instead of a sleep (issue 33, item 5): it lets every promise continuation that is
 * ready run, and nothing else. setImmediate runs only once the microtask queue is empty, so after one turn code
 * that does no real I/O and waits on no timer has done everything it can do without time passing. Not for code
 * that waits on sockets or files: there, wait for the event itself.
 */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
