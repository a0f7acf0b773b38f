/** One row of the option table (config-options.ts; etcd's compatibility rows: config-etcd-notices.ts). */
export type OptionKind = 'string' | 'bool' | 'uint' | 'urls' | 'enum' | 'duration' | 'list';

export type OptionGroup = 'member' | 'clustering' | 'security' | 'limits' | 'k3s' | 'snapshots' | 'logging' | 'experimental' | 'etcd';

export interface OptionSpec {
  flag: string;
  kind: OptionKind;
  /** Default as flag text ('' = unset). */
  default: string;
  help: string;
  values?: readonly string[];
  group: OptionGroup;
  /** Accepted for etcd compatibility but without effect here: logged (this text) when set. */
  notice?: string;
  /** Refused when set to a non-empty value: this text says why. */
  refuse?: string;
}
