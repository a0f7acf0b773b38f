/** The WAL's checksum lives in base (the state stream and HashKV use it too); re-exported for wal's imports. */
export { crc32c } from '../base/crc32c.js';
