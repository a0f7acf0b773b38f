/** Whether every address a member will listen on is free, checked before anything is changed. */
import { createServer } from 'node:net';
import type { MemberOptions } from '../config/member-options.js';

/**
 * Before asking a cluster to add us: every address we will listen on must be free, so a busy port fails
 * here, with the cluster unchanged, not after the add (an orphan learner); and a restart's busy port fails
 * before the data directory is opened (start-checks.ts). A race with another program binding the port in
 * between is still possible; main/member.ts removes a joined member again when start fails.
 */
export async function checkListeners(o: Pick<MemberOptions, 'listenClientUrls' | 'listenPeerUrls' | 'listenMetricsUrls'>, note: string): Promise<void> {
  for (const raw of [...o.listenClientUrls, ...o.listenPeerUrls, ...o.listenMetricsUrls]) {
    const u = new URL(raw.includes('://') ? raw : `http://${raw}`);
    if (u.port === '' || u.port === '0') continue;
    await new Promise<void>((resolve, reject) => {
      const s = createServer();
      s.once('error', (error: NodeJS.ErrnoException) =>
        reject(new Error(`cannot listen on ${raw} (${error.code ?? error.message}): is another etcd or etcetera running there? (${note})`)),
      );
      s.listen(Number(u.port), u.hostname.replace(/^\[(.*)\]$/, '$1'), () => s.close(() => resolve()));
    });
  }
}

