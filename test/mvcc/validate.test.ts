import { describe, expect, it } from 'vitest';
import { validateRequest } from '../../src/mvcc/validate.js';
import { MvccError } from '../../src/mvcc/types.js';
import { validationCases } from './validation-cases.js';

describe('validateRequest reports etcd\'s first error', () => {
  it.each(validationCases)('$name → $error', ({ op, error }) => {
    if (error === null) expect(() => validateRequest(op)).not.toThrow();
    else expect(() => validateRequest(op)).toThrow(new MvccError(error));
  });
});
