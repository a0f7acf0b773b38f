/**
 * The three sources of options, each read into the same shape: flag name → text value, plus where it came
 * from (for error messages). Typing and validation happen once, afterwards, in config.ts.
 */
import { parse as parseYaml } from 'yaml';
import { type OptionSpec, envName, ignoredEtcdOptions, optionSpecs } from './config-options.js';

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
}

/**
 * Go-flag style, as etcd: `--flag value`, `--flag=value`, single dash too; a boolean flag never takes the
 * next argument (`--client-cert-auth=false` to turn one off); the last occurrence wins.
 */
export function readArgv(argv: readonly string[]): ArgvResult {
  const options: RawOptions = new Map();
  const warnings: string[] = [];
  let help = false;
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
    const spec = optionSpecs.get(name);
    if (spec === undefined && !ignoredEtcdOptions.has(name)) throw new ConfigError(`unknown flag --${name} (see --help)`);
    if (value === undefined && spec?.kind !== 'bool') {
      const next = argv[i + 1];
      // An ignored etcd flag may be boolean or not; take the next argument only when it is not a flag.
      if (next === undefined || (spec === undefined && next.startsWith('-'))) {
        if (spec !== undefined) throw new ConfigError(`flag needs an argument: --${name}`);
      } else {
        value = next;
        i += 1;
      }
    }
    if (spec === undefined) {
      warnings.push(`flag --${name} is accepted for etcd compatibility and ignored`);
      continue;
    }
    options.set(name, { value: value ?? 'true', where: `flag --${name}` });
  }
  return { options, warnings, help };
}

/** ETCETERA_* variables; an unknown one is warned about (as etcd does for ETCD_*), not fatal. */
export function readEnv(env: Readonly<Record<string, string | undefined>>): SourceResult {
  const options: RawOptions = new Map();
  const warnings: string[] = [];
  const byEnv = new Map([...optionSpecs.values()].map((s) => [envName(s.flag), s]));
  for (const [key, value] of Object.entries(env)) {
    if (!key.startsWith('ETCETERA_') || value === undefined) continue;
    const spec = byEnv.get(key);
    if (spec === undefined) {
      warnings.push(`unrecognized environment variable ${key}=${value}`);
      continue;
    }
    options.set(spec.flag, { value, where: `environment ${key}` });
  }
  return { options, warnings };
}

/** etcd's YAML nests TLS settings; these map its nested keys to our flags. */
const nestedSections: Record<string, Record<string, string>> = {
  'client-transport-security': {
    'cert-file': 'cert-file',
    'key-file': 'key-file',
    'trusted-ca-file': 'trusted-ca-file',
    'client-cert-auth': 'client-cert-auth',
  },
  'peer-transport-security': {
    'cert-file': 'peer-cert-file',
    'key-file': 'peer-key-file',
    'trusted-ca-file': 'peer-trusted-ca-file',
    'client-cert-auth': 'peer-client-cert-auth',
  },
};

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
    addYamlValue(key, key, value, path, options, warnings);
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
    addYamlValue(flag, `${key}.${inner}`, innerValue, path, options, warnings);
  }
}

function addYamlValue(flag: string, key: string, value: unknown, path: string, options: RawOptions, warnings: string[]): void {
  const spec = optionSpecs.get(flag);
  if (spec === undefined) {
    if (ignoredEtcdOptions.has(flag)) warnings.push(`config file ${path}: key ${key} is accepted for etcd compatibility and ignored`);
    else throw new ConfigError(`unknown key ${JSON.stringify(key)} in config file ${path}`);
    return;
  }
  if (value === null || value === undefined) return;
  options.set(flag, { value: yamlToText(spec, key, value, path), where: `config file ${path} (key ${key})` });
}

function yamlToText(spec: OptionSpec, key: string, value: unknown, path: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && spec.kind === 'urls' && value.every((v) => typeof v === 'string')) return value.join(',');
  throw new ConfigError(`config file ${path}: key ${key} has a value of the wrong type (${JSON.stringify(value)})`);
}
