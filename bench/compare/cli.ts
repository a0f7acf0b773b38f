/**
 * `npm run bench:compare [-- options]`: etcd 3.4 and etcetera side by side (issue 6). Each scenario runs
 * A B A B (etcd, etcetera, etcd, etcetera) on fresh clusters; the table shows the mean of each system's runs,
 * every run, the ratio etcetera/etcd and the issue's target. JSON goes to bench/results/<date>-<mode>.json.
 *
 *   --quick            short durations (a smoke run of the harness, ~3 min)
 *   --scenario a,b     only these (puts, slow-fsync, at-rest, sd-stalls, reads, watch, memory, memory-1m,
 *                      memory-kube, memory-cluster, memory-cgroup, witness)
 *   --low-end          every server capped at half a core and 512 MiB, every fsync delayed 20 ms (SD card)
 *   --reps N           runs per system (default 2)
 *   --clients a,b      the puts scenarios' client counts (default 1,16,256; `--clients 1` for latency runs)
 *   --system s         only etcd or only etcetera (harness work, profiling)
 *   --cpu-prof         etcetera members run under node --cpu-prof; the top frames are printed at the end
 *   --trace-fsyncs     every member under strace (no delay), to report the leader's fsyncs per put
 *   --no-save          do not write the JSON file
 *
 * Needs /usr/bin/etcd (Debian etcd-server), strace, and a build of etcetera (`npm run build`).
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Cluster, etcdBin, etcetraCli, repoRoot, type ClusterOptions, type System } from './cluster.js';
import type { RunContext, Scenario } from './measure.js';
import { makeCaps } from './proc.js';
import { profileMarkdown, summarizeProfiles } from './profile.js';
import { describeMachine, machineMarkdown, markdown, Results } from './report.js';
import { memoryScenarios } from './scenarios-memory.js';
import { reads, watchOnly } from './scenarios-read.js';
import { witnessScenario } from './scenarios-witness.js';
import { atRest, putsPlain, putsSlowFsync, sdStalls } from './scenarios-write.js';

const all: Scenario[] = [putsPlain, putsSlowFsync, atRest, sdStalls, reads, watchOnly, ...memoryScenarios, witnessScenario];

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    scenario: { type: 'string' },
    'low-end': { type: 'boolean', default: false },
    reps: { type: 'string', default: '2' },
    clients: { type: 'string' },
    system: { type: 'string' },
    'cpu-prof': { type: 'boolean', default: false },
    'trace-fsyncs': { type: 'boolean', default: false },
    'no-save': { type: 'boolean', default: false },
  },
});

function pickScenarios(): Scenario[] {
  if (!args.scenario) return all.filter((s) => !(args['low-end'] && s.skipLowEnd));
  const names = args.scenario.split(',');
  const unknown = names.filter((n) => !all.some((s) => s.name === n));
  if (unknown.length > 0) throw new Error(`unknown scenario ${unknown.join(', ')}; known: ${all.map((s) => s.name).join(', ')}`);
  return all.filter((s) => names.includes(s.name));
}

function pickSystems(): System[] {
  if (args.system === undefined) return ['etcd', 'etcetera'];
  if (args.system !== 'etcd' && args.system !== 'etcetera') throw new Error('--system is etcd or etcetera');
  return [args.system];
}

function checkPrerequisites(systems: System[]): void {
  if (systems.includes('etcd') && !existsSync(etcdBin)) throw new Error(`${etcdBin} missing: apt-get install etcd-server`);
  if (systems.includes('etcetera') && !existsSync(etcetraCli)) throw new Error(`${etcetraCli} missing: run \`npm run build\``);
}

function modeName(): string {
  const parts = [args['low-end'] ? 'low-end' : 'full'];
  if (args.quick) parts.push('quick');
  if (args.scenario) parts.push(args.scenario.replace(/,/g, '+'));
  if (args.system) parts.push(args.system);
  if (args.clients) parts.push(`${args.clients.replace(/,/g, '+')}c`);
  if (args['trace-fsyncs']) parts.push('traced');
  return parts.join('-');
}

async function main(): Promise<void> {
  const scenarios = pickScenarios();
  const systems = pickSystems();
  checkPrerequisites(systems);
  const reps = Number(args.reps);
  const clients = args.clients?.split(',').map(Number);
  if (clients?.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--clients is a list of positive integers');
  const machine = describeMachine();
  const mode = modeName();
  const profDir = args['cpu-prof'] ? mkdtempSync(join(tmpdir(), 'etcbench-prof-')) : undefined;
  const defaults: Partial<ClusterOptions> = args['low-end'] ? { lowEnd: true, fsyncDelayUs: 20_000 } : {};
  if (args['trace-fsyncs']) defaults.traceFsyncs = true;
  const planSeconds = scenarios.reduce((a, s) => a + s.seconds(args.quick) * reps * systems.length, 0);
  console.log(machineMarkdown(machine, mode));
  console.log(`plan: ${scenarios.map((s) => s.name).join(', ')} × ${reps} runs × ${systems.join('/')}: ~${Math.round(planSeconds / 60)} min`);
  if (args['low-end']) {
    const probe = makeCaps(`etcbench-${process.pid}-probe`);
    probe.cleanup();
    machine.note += `; low-end mode: every server process under ${probe.describe}; every fsync +20 ms (strace)`;
    console.log(`low-end caps: ${probe.describe}`);
  }
  const results = new Results();
  const titles = new Map(scenarios.map((s) => [s.name, s.title]));
  for (const scenario of scenarios) {
    console.log(`\n== ${scenario.title}`);
    for (let rep = 0; rep < reps; rep++) {
      for (const system of systems) {
        const ctx: RunContext = {
          system, quick: args.quick, lowEnd: args['low-end'], clients, log: (l) => console.log(l),
          clusterDefaults: system === 'etcetera' && profDir ? { ...defaults, cpuProfDir: profDir } : defaults,
        };
        const t0 = performance.now();
        try {
          results.add(scenario.name, system, await scenario.run(ctx));
          console.log(`  (${system} run ${rep + 1} took ${((performance.now() - t0) / 1000).toFixed(0)} s)`);
        } catch (e) {
          const error = e instanceof Error ? e.message : String(e);
          results.failures.push({ scenario: scenario.name, system, run: rep + 1, error: error.slice(0, 2000) });
          console.log(`  ${system} run ${rep + 1} FAILED: ${error.split('\n').slice(0, 12).join('\n    ')}`);
        }
      }
    }
  }
  const table = markdown(results, titles);
  console.log(`\n${machineMarkdown(machine, mode)}\n\n${table}`);
  if (results.failures.length > 0) console.log(`\nfailed runs: ${results.failures.map((f) => `${f.system} ${f.scenario} #${f.run}`).join(', ')}`);
  let profile: ReturnType<typeof summarizeProfiles> | undefined;
  if (profDir) {
    profile = summarizeProfiles(profDir, repoRoot);
    console.log(`\n${profileMarkdown(profile)}\n(profiles in ${profDir})`);
  }
  if (!args['no-save']) {
    const dir = join(repoRoot, 'bench/results');
    mkdirSync(dir, { recursive: true });
    const stamp = new Date().toISOString().slice(0, 16).replace(/:/g, '').replace('T', '-');
    const file = join(dir, `${stamp}-${mode}.json`);
    const json = { date: new Date().toISOString(), mode, reps, machine, rows: [...results.rows.values()], failures: results.failures, profileTop: profile?.all.byFunction, table };
    writeFileSync(file, JSON.stringify(json, null, 2) + '\n');
    const md = [`# bench:compare ${mode}, ${json.date}`, '', machineMarkdown(machine, mode), '', table, ''];
    if (profile) md.push(profileMarkdown(profile), '');
    writeFileSync(file.replace(/\.json$/, '.md'), md.join('\n'));
    console.log(`\nsaved ${file} (and .md)`);
  }
}

const interrupt = (): void => {
  Cluster.killAllNow();
  process.exit(130);
};
process.on('SIGINT', interrupt);
process.on('SIGTERM', interrupt);
try {
  await main();
} catch (e) {
  Cluster.killAllNow();
  throw e;
}
// gRPC channels and timers of failed runs must not keep the process alive.
process.exit(0);
