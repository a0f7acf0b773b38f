/** The TLS files and checks of one listener, client or peer, as etcd's flags name them. */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
  trustedCaFile?: string;
  clientCertAuth?: boolean;
  /** etcd --client-crl-file / --peer-crl-file: certificates it revokes are refused in handshakes. */
  crlFile?: string;
  /** etcd --peer-cert-allowed-cn (and YAML allowed-cn): with client cert auth, the certificate's CN must be one of these. */
  allowedCns?: string[];
  /** etcd --peer-cert-allowed-hostname / --client-cert-allowed-hostname: the certificate must be valid for one of these. */
  allowedHostnames?: string[];
}
