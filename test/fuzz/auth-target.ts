/**
 * A fuzz target with auth on and JWT tokens, so the garbage in cases' Authorization, Grpc-Metadata-Token and
 * token metadata reaches the token parser and the auth gate instead of being ignored.
 */
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, tempDir, type ServerProcess } from '../e2e/harness.js';

export const fuzzRoot = { username: 'root', password: 'fuzz-root-pw' };

async function gateway(member: ServerProcess, path: string, body: unknown): Promise<void> {
  const res = await fetch(`${member.clientUrl}${path}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
}

/** A member with JWT auth enabled and root's password fuzzRoot.password. */
export async function startAuthTarget(name: string): Promise<ServerProcess> {
  const dir = tempDir(`${name}-keys`);
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  writeFileSync(join(dir, 'k'), pair.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(join(dir, 'k.pub'), pair.publicKey.export({ type: 'spki', format: 'pem' }));
  const member = await startServer({
    name,
    args: ['--cluster-init', '--bcrypt-cost', '4', '--auth-token', `jwt,pub-key=${join(dir, 'k.pub')},priv-key=${join(dir, 'k')},sign-method=ES256,ttl=5m`],
  });
  await gateway(member, '/v3/auth/user/add', { name: fuzzRoot.username, password: fuzzRoot.password });
  await gateway(member, '/v3/auth/user/grant', { user: fuzzRoot.username, role: 'root' });
  await gateway(member, '/v3/auth/enable', {});
  return member;
}
