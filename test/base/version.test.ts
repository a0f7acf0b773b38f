/** Build, cluster and data-format versions (src/base/version.ts). */
import { describe, expect, it } from 'vitest';
import {
  clusterVersionMismatch, clusterVersionOf, compareMajorMinor, dataFormatMismatch, dataFormatOf, decideClusterVersion, parseVersion,
} from '../../src/base/version.js';

describe('versions', () => {
  it.each([
    ['0.2.0', [0, 2, 0]],
    ['0.2.0+fdef2e7-dirty', [0, 2, 0]],
    ['v3.5.17', [3, 5, 17]],
    ['1.10', [1, 10, 0]],
    ['0.2.0-rc.1', [0, 2, 0]],
    ['x.y', undefined],
    ['0.2.0 ', undefined],
  ])('parses %j', (text, parsed) => {
    expect(parseVersion(text)).toEqual(parsed);
  });

  it('compares by major.minor only, numerically', () => {
    expect(compareMajorMinor('0.2.9', '0.2.0+abc')).toBe(0);
    expect(compareMajorMinor('0.10.0', '0.9.0')).toBe(1);
    expect(compareMajorMinor('0.1', '1.0.0')).toBe(-1);
    expect(() => compareMajorMinor('0.1', 'new')).toThrow(/not a version: new/);
  });

  it('runs a cluster at the lowest build, and decides nothing while a member is unknown', () => {
    expect(decideClusterVersion(['0.2.0+a', '0.2.3', '0.2.0'])).toBe('0.2');
    expect(decideClusterVersion(['0.2.0', '0.1.0', '0.3.1'])).toBe('0.1');
    expect(decideClusterVersion(['0.2.0', undefined, '0.1.0'])).toBeUndefined();
    expect(decideClusterVersion([])).toBeUndefined();
    expect(clusterVersionOf('0.2.0+fdef2e7')).toBe('0.2');
  });

  it('writes format 1 at cluster version 0.1 and format 2 from 0.2 on', () => {
    expect(dataFormatOf('0.1')).toBe(1);
    expect(dataFormatOf('0.2')).toBe(2);
    expect(dataFormatOf('0.7')).toBe(2);
  });

  it('refuses data it cannot read and clusters it cannot run in', () => {
    expect(dataFormatMismatch(1)).toBeUndefined();
    expect(dataFormatMismatch(2)).toBeUndefined();
    expect(dataFormatMismatch(3)).toBe('data too new');
    expect(dataFormatMismatch(0)).toBe('data too old');
    expect(clusterVersionMismatch('0.2.0', '0.1')).toBeUndefined();
    expect(clusterVersionMismatch('0.2.0', '0.2')).toBeUndefined();
    expect(clusterVersionMismatch('0.2.0', '0.3')).toBe('build too old');
    expect(clusterVersionMismatch('0.2.0', '0.0')).toBe('build too new');
  });
});
