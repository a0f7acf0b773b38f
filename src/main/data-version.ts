/**
 * `<data-dir>/member/version`: the data format the directory is written in and the cluster version its
 * member last applied, so a start can judge them before it opens (and so changes) anything:
 *
 *   {"dataFormat":2,"clusterVersion":"0.2","writtenBy":"0.2.0+fdef2e7"}
 *
 * A directory written by a build before 0.2 has no such file: it is format 1 at cluster version 0.1.
 * The file is written whole (write, fsync, rename) when a member is created and when the cluster version it
 * applies changes the format (base/version.ts: the format follows the cluster version, so it is raised only
 * once every member runs a build that reads it).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  clusterVersionMismatch, clusterVersionOldest, dataFormatMismatch, dataFormatOf, dataFormatOldest, dataFormatVersion,
} from '../base/version.js';
import { writeFileDurably } from '../storage/identity.js';

export const dataVersionFile = 'version';

export interface DataVersion {
  dataFormat: number;
  clusterVersion?: string;
  /** The build that wrote the file, to name in a refusal. */
  writtenBy?: string;
}

/** The record of a member directory; an existing directory without one is format 1 (a build before 0.2). */
export async function readDataVersion(memberDir: string): Promise<DataVersion> {
  let text: string;
  try {
    text = await readFile(join(memberDir, dataVersionFile), 'utf8');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return { dataFormat: 1 };
    throw error;
  }
  const j = JSON.parse(text) as Partial<DataVersion>;
  if (typeof j.dataFormat !== 'number' || !Number.isSafeInteger(j.dataFormat)) {
    throw new Error(`${join(memberDir, dataVersionFile)} is damaged (no data format): restore a backup, or remove, wipe and rejoin this member`);
  }
  return j as DataVersion;
}

export function writeDataVersion(memberDir: string, record: DataVersion): Promise<void> {
  return writeFileDurably(memberDir, dataVersionFile, `${JSON.stringify(record)}\n`);
}

/** The record of a directory this build creates. */
export function newDataVersion(build: string): DataVersion {
  return { dataFormat: dataFormatVersion, writtenBy: build };
}

/** The record once `clusterVersion` is applied: the format it allows, never above what this build writes. */
export function dataVersionAt(clusterVersion: string, build: string): DataVersion {
  return { dataFormat: Math.min(dataFormatOf(clusterVersion), dataFormatVersion), clusterVersion, writtenBy: build };
}

/** Why this build must not start on the data in `memberDir`, with what to do instead; undefined if it may. */
export function startRefusal(memberDir: string, record: DataVersion, build: string): string | undefined {
  const file = join(memberDir, dataVersionFile);
  const by = record.writtenBy === undefined ? '' : ` (written by etcetera ${record.writtenBy})`;
  const viaSnapshot = 'or move the data with a snapshot: `etcdctl snapshot save` from a running member, then `etcetera snapshot restore` with this build into a new data directory';
  switch (dataFormatMismatch(record.dataFormat)) {
    case 'data too new':
      return `${memberDir} holds data format ${record.dataFormat}${by}, newer than this build reads (etcetera ${build} reads formats ${dataFormatOldest} to ${dataFormatVersion}): ` +
        `start the newer build again, ${viaSnapshot}`;
    case 'data too old':
      return `${memberDir} holds data format ${record.dataFormat}${by}, older than this build reads (etcetera ${build} reads formats ${dataFormatOldest} to ${dataFormatVersion}): ` +
        `upgrade through a build that reads both first, ${viaSnapshot}`;
    case undefined:
  }
  if (record.clusterVersion === undefined) return undefined;
  switch (clusterVersionMismatch(build, record.clusterVersion)) {
    case 'build too old':
      return `this member's cluster runs at version ${record.clusterVersion} (recorded in ${file}), newer than this build (etcetera ${build}): ` +
        `start etcetera ${record.clusterVersion} or newer; a member may run an older build only while the cluster version has not passed it, ${viaSnapshot}`;
    case 'build too new':
      return `this member's cluster runs at version ${record.clusterVersion} (recorded in ${file}), older than this build (etcetera ${build}) runs beside (${clusterVersionOldest} and newer): ` +
        `upgrade the cluster through an intermediate build first, ${viaSnapshot}`;
    case undefined:
      return undefined;
  }
}

/**
 * Keeps the record in step with the cluster version this member applies: writes run one at a time, in the
 * order applied, and only when the record changes. A cluster version above this build stops the member
 * (the leader never decides one, unless a member announced a build it does not run).
 */
export class DataVersionRecorder {
  readonly #memberDir: string;
  readonly #build: string;
  readonly #onFatal: (error: unknown) => void;
  #last: string;
  #writes: Promise<void> = Promise.resolve();

  constructor(memberDir: string, build: string, current: DataVersion, onFatal: (error: unknown) => void) {
    this.#memberDir = memberDir;
    this.#build = build;
    this.#last = JSON.stringify(current);
    this.#onFatal = onFatal;
  }

  applied(clusterVersion: string): void {
    if (clusterVersionMismatch(this.#build, clusterVersion) === 'build too old') {
      this.#onFatal(new Error(`the cluster version became ${clusterVersion}, newer than this member's build (etcetera ${this.#build}): start etcetera ${clusterVersion} or newer`));
      return;
    }
    const record = dataVersionAt(clusterVersion, this.#build);
    const text = JSON.stringify(record);
    if (text === this.#last) return;
    this.#last = text;
    this.#writes = this.#writes.then(() => writeDataVersion(this.#memberDir, record)).catch((error: unknown) => this.#onFatal(error));
  }

  /** Resolves once every write asked for so far is durable. */
  settled(): Promise<void> {
    return this.#writes;
  }
}
