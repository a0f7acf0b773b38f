/** --storage-endurance-tbw and --storage-life-warning-years: defaults named once, decimals, bad values refused. */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/config.js';
import { storageEnduranceTbwDefault, storageLifeWarningYearsDefault } from '../../src/base/limits.js';

function parse(argv: string[], env: Record<string, string> = {}) {
  const r = parseConfig({ argv, env });
  if (r.kind !== 'config') throw new Error('expected a config');
  return r.config;
}

describe('the wear flags', () => {
  it('default to the named limits', () => {
    expect(parse([])).toMatchObject({ storageEnduranceTbw: storageEnduranceTbwDefault, storageLifeWarningYears: storageLifeWarningYearsDefault });
  });

  it.each([
    [['--storage-endurance-tbw', '0.5', '--storage-life-warning-years', '1.5'], {}, 0.5, 1.5],
    [['--storage-endurance-tbw=600'], {}, 600, storageLifeWarningYearsDefault],
    [[], { ETCETERA_STORAGE_ENDURANCE_TBW: '117', ETCETERA_STORAGE_LIFE_WARNING_YEARS: '10' }, 117, 10],
  ])('take decimals from flags and the environment: %j %j', (argv, env, tbw, years) => {
    expect(parse(argv, env)).toMatchObject({ storageEnduranceTbw: tbw, storageLifeWarningYears: years });
  });

  it.each(['0', '-1', 'four', '', 'Infinity', 'NaN'])('refuse %j', (value) => {
    expect(() => parse(['--storage-endurance-tbw', value])).toThrow(ConfigError);
    expect(() => parse(['--storage-life-warning-years', value])).toThrow(/expected a number above zero/);
  });
});
