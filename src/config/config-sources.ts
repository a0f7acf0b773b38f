/**
 * The three sources of options, each read into the same shape: flag name → text value, plus where it came
 * from (for error messages). Typing and validation happen once, afterwards, in config.ts.
 */
import { createRequire } from 'node:module';
import { type OptionSpec, envName, optionSpecs } from './config-options.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export interface RawValue {
  value: string;
  /** e.g. "flag --name", "environment ETCETERA_NAME", "config file /etc/x.yaml (key name)". */
  where: string;
}

export type RawOptions = Map<string, RawValue>;

export interface SourceResult {
  options: RawOptions;
  warnings: string[];
}

export interface ArgvResult extends SourceResult {
  help: boolean;
  /** `--version`: print the version and exit, as etcd does. */
  version: boolean;
}

/**
 * Go-flag style, as etcd: `--flag value`, `--flag=value`, single dash too; a boolean flag never takes the
 * next argument (`--client-cert-auth=false` to turn one off); the last occurrence wins.
 */
export function readArgv(argv: readonly string[]): ArgvResult {
  const options: RawOptions = new Map();
  let help = false;
  let version = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const m = /^--?([^=]+)(?:=(.*))?$/s.exec(arg);
    if (m === null || arg === '-' || arg === '--') throw new ConfigError(`unexpected argument ${JSON.stringify(arg)} (flags start with --; see --help)`);
    const name = m[1] as string;
    let value = m[2];
    if (name === 'help' || name === 'h') {
      help = true;
      continue;
    }
    if (name === 'version' && (value === undefined || value === 'true')) {
      version = true;
      continue;
    }
    const spec = optionSpecs.get(name);
    if (spec === undefined) throw new ConfigError(`unknown flag --${name} (see --help)`);
    if (value === undefined && spec.kind !== 'bool') {
      const next = argv[i + 1];
      if (next === undefined) throw new ConfigError(`flag needs an argument: --${name}`);
      value = next;
      i += 1;
    }
    options.set(name, { value: value ?? 'true', where: `flag --${name}` });
  }
  return { options, warnings: [], help, version };
}

/**
 * ETCETERA_* variables, and etcd's ETCD_* names for the same options (so an etcd unit file's environment keeps
 * working; ETCETERA_* wins). An unknown one is warned about, as etcd does for ETCD_*, not fatal.
 */
export function readEnv(env: Readonly<Record<string, string | undefined>>): SourceResult {
  const options: RawOptions = new Map();
  const warnings: string[] = [];
  for (const prefix of ['ETCD', 'ETCETERA'] as const) {
    const byEnv = new Map([...optionSpecs.values()].map((s) => [envName(s.flag, prefix), s]));
    for (const [key, value] of Object.entries(env)) {
      if (!key.startsWith(`${prefix}_`) || value === undefined) continue;
      const spec = byEnv.get(key);
      if (spec === undefined) {
        // etcd's own test and tooling variables, not options.
        if (prefix === 'ETCD' && /^ETCD_(UNSUPPORTED_ARCH|VERIFY|ROOT_DIR)$/.test(key)) continue;
        warnings.push(`unrecognized environment variable ${key}=${value}`);
        continue;
      }
      options.set(spec.flag, { value, where: `environment ${key}` });
    }
  }
  return { options, warnings };
}

/** etcd's YAML nests TLS and socket settings; these map its nested keys to our flags. */
const nestedSections: Record<string, Record<string, string>> = {
  'client-transport-security': {
    'cert-file': 'cert-file',
    'key-file': 'key-file',
    'client-cert-file': 'client-cert-file',
    'client-key-file': 'client-key-file',
    'trusted-ca-file': 'trusted-ca-file',
    'client-cert-auth': 'client-cert-auth',
    'auto-tls': 'auto-tls',
    'allowed-hostname': 'client-cert-allowed-hostname',
    'allowed-cn': 'client-cert-allowed-cn',
  },
  'peer-transport-security': {
    'cert-file': 'peer-cert-file',
    'key-file': 'peer-key-file',
    'client-cert-file': 'peer-client-cert-file',
    'client-key-file': 'peer-client-key-file',
    'trusted-ca-file': 'peer-trusted-ca-file',
    'client-cert-auth': 'peer-client-cert-auth',
    'auto-tls': 'peer-auto-tls',
    'allowed-cn': 'peer-cert-allowed-cn',
    'allowed-hostname': 'peer-cert-allowed-hostname',
  },
  'socket-options': {
    'reuse-port': 'socket-reuse-port',
    'reuse-address': 'socket-reuse-address',
  },
};

/** YAML keys whose name differs from the flag's (etcd's embed.Config json tags). */
const yamlAliases: Record<string, string> = {
  'experimental-snapshot-catch-up-entries': 'experimental-snapshot-catchup-entries',
};

/**
 * The YAML parser is loaded when a config file is read, not with this module: most processes (a witness, a
 * member started with flags) never parse one, and loading it cost a witness 1.3 MB of RSS (issue 24).
 */
function parseYaml(text: string): unknown {
  const yaml = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  return yaml.parse(text);
}

/** Keys of the YAML config file: the flag names, as in etcd's config file (plus its nested TLS sections). */
export function readYaml(text: string, path: string): SourceResult {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`invalid YAML in config file ${path}: ${(err as Error).message}`);
  }
  if (doc === null || doc === undefined) return { options: new Map(), warnings: [] };
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(`config file ${path} must be a YAML mapping of option names to values`);
  const options: RawOptions = new Map();
  const warnings: string[] = [];
  for (const [key, value] of Object.entries(doc as Record<string, unknown>)) {
    const section = nestedSections[key];
    if (section !== undefined) {
      readSection(section, key, value, path, options, warnings);
      continue;
    }
    if (key === 'config-file') throw new ConfigError(`config file ${path}: key config-file is not allowed inside a config file`);
    addYamlValue(yamlAliases[key] ?? key, key, value, path, options);
  }
  return { options, warnings };
}

function readSection(section: Record<string, string>, key: string, value: unknown, path: string, options: RawOptions, warnings: string[]): void {
  if (value === null || value === undefined) return;
  if (typeof value !== 'object' || Array.isArray(value)) throw new ConfigError(`config file ${path}: ${key} must be a mapping`);
  for (const [inner, innerValue] of Object.entries(value as Record<string, unknown>)) {
    const flag = section[inner];
    if (flag === undefined) {
      warnings.push(`config file ${path}: ${key}.${inner} is not supported and ignored`);
      continue;
    }
    addYamlValue(flag, `${key}.${inner}`, innerValue, path, options);
  }
}

function addYamlValue(flag: string, key: string, value: unknown, path: string, options: RawOptions): void {
  const spec = optionSpecs.get(flag);
  if (spec === undefined) throw new ConfigError(`unknown key ${JSON.stringify(key)} in config file ${path}`);
  if (value === null || value === undefined) return;
  options.set(flag, { value: yamlToText(spec, key, value, path), where: `config file ${path} (key ${key})` });
}

/**
 * etcd reads its YAML through JSON into Go types: a duration is an integer of nanoseconds there (k3s writes
 * `experimental-watch-progress-notify-interval: 5000000000`); we also take Go's duration text ("5s").
 */
function yamlToText(spec: OptionSpec, key: string, value: unknown, path: string): string {
  if (typeof value === 'number' && spec.kind === 'duration') return `${value}ns`;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && (spec.kind === 'urls' || spec.kind === 'list') && value.every((v) => typeof v === 'string')) return value.join(',');
  throw new ConfigError(`config file ${path}: key ${key} has a value of the wrong type (${JSON.stringify(value)})`);
}
