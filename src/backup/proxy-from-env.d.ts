/** proxy-from-env 2 ships no types: the one function used (backup/s3-store.ts). */
declare module 'proxy-from-env' {
  /** The proxy URL the environment gives for `url` (HTTPS_PROXY / HTTP_PROXY / ALL_PROXY minus NO_PROXY), or ''. */
  export function getProxyForUrl(url: string): string;
}
