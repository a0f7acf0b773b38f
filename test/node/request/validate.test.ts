import { describe, expect, it } from 'vitest';
import { EtcdError } from '../../../src/node/errors.js';
import { validateRequest } from '../../../src/node/request/validate.js';
import { validationCases } from './validation-cases.js';

describe('validateRequest reports etcd\'s first error', () => {
  it.each(validationCases)('$name → $error', ({ op, error }) => {
    if (error === null) expect(() => validateRequest(op)).not.toThrow();
    else expect(() => validateRequest(op)).toThrow(new EtcdError(error));
  });
});
