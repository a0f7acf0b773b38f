// A separate process for test/e2e/auth-lockout.test.ts: <calls> parallel anonymous callers of the JSON gateway on
// 127.0.0.1:<port>, each from <localAddress> (a source of its own), each sending its next request as soon as
// the last is answered, for <ms> or until SIGTERM (calls then unanswered are dropped). <kind> is `authenticate` (wrong root passwords) or `useradd` (UserAdd
// without a token). It prints `flooding` once every caller has sent its first request, and at the end one JSON
// line: the number of calls and of each answer. Plain JavaScript, so the flood costs the test's own event
// loop nothing and needs no TypeScript loader.
import * as http from 'node:http';

const [port, ms, calls, localAddress, kind] = [Number(process.argv[2]), Number(process.argv[3]), Number(process.argv[4]), process.argv[5], process.argv[6]];
const agent = new http.Agent({ keepAlive: true, maxSockets: calls, localAddress });
const path = kind === 'useradd' ? '/v3/auth/user/add' : '/v3/auth/authenticate';
let sent = 0;
let started = 0;
const answers = {};
const deadline = performance.now() + ms;
// At the deadline, or on SIGTERM (the test is done with it: flood-process.ts finish()), calls still held are
// dropped (not counted) and the flood ends at once.
let stopped = false;
const stop = () => {
  stopped = true;
  clearTimeout(deadlineTimer); // or it would hold the process until the deadline
  agent.destroy();
};
const deadlineTimer = setTimeout(stop, ms);
process.once('SIGTERM', stop);

function call(n) {
  const body = JSON.stringify(kind === 'useradd' ? { name: `mallory-${n}`, password: `pw-${n}` } : { name: 'root', password: `wrong-${n}` });
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        let answer = `http ${res.statusCode}`;
        try {
          const j = JSON.parse(text);
          answer = j.error ?? j.message ?? (res.statusCode === 200 ? 'accepted' : answer);
        } catch {}
        resolve(answer);
      });
      res.on('error', (e) => resolve(`response error ${e.code}`));
    });
    req.on('error', (e) => resolve(`request error ${e.code}`));
    req.end(body);
  });
}

const caller = async () => {
  let first = true;
  while (!stopped && performance.now() < deadline) {
    const p = call(++sent);
    if (first && ++started === calls) process.stdout.write('flooding\n');
    first = false;
    const answer = await p;
    if (!stopped) answers[answer] = (answers[answer] ?? 0) + 1;
  }
};
await Promise.all(Array.from({ length: calls }, caller));
agent.destroy();
process.stdout.write(`${JSON.stringify({ calls: sent, answers })}\n`);
