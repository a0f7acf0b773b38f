/** Member, cluster and lease ids as etcd prints them: lower-case hex, no prefix, no padding. */
export function hex(id: bigint): string {
  return id.toString(16);
}
