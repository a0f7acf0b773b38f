// A separate process for test/e2e/auth-flood.test.ts: `calls` parallel callers of Authenticate with wrong
// passwords on 127.0.0.1:<port>, each sending its next as soon as the last is answered, for <ms>. It prints
// `flooding` once every caller is under way, and at the end one JSON line: the number of calls and of each answer. Plain JavaScript (raw protobuf bytes), so the flood
// costs the test's own event loop nothing and needs no TypeScript loader.
import * as grpc from '@grpc/grpc-js';

const [port, ms, calls, user] = [Number(process.argv[2]), Number(process.argv[3]), Number(process.argv[4]), process.argv[5] ?? 'root'];
const field = (n, text) => {
  const b = Buffer.from(text);
  return Buffer.concat([Buffer.from([(n << 3) | 2, b.length]), b]);
};
const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
const path = '/etcdserverpb.Auth/Authenticate';
const identity = (b) => b;
let sent = 0;
const answers = {};
const deadline = performance.now() + ms;
const caller = async () => {
  while (performance.now() < deadline) {
    sent++;
    const req = Buffer.concat([field(1, user), field(2, `wrong-${sent}`)]);
    const answer = await new Promise((resolve) =>
      client.makeUnaryRequest(path, identity, identity, req, (err) => resolve(err ? err.details : 'accepted')),
    );
    answers[answer] = (answers[answer] ?? 0) + 1;
    if (sent === calls) process.stdout.write('flooding\n');
  }
};
await Promise.all(Array.from({ length: calls }, caller));
client.close();
process.stdout.write(`${JSON.stringify({ calls: sent, answers })}\n`);
