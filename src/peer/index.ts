export { PeerTransport, defaultTransportLimits } from './transport.js';
export { parsePeerUrl } from './connection.js';
export {
  type PeerInbound,
  type PeerRequest,
  type PeerRequestInfo,
  type PeerResponse,
  type PeerStats,
  type PeerTlsOptions,
  type PeerTransportLimits,
  type PeerTransportOptions,
  type PeerRefusal,
  type PeerRefusalCode,
  PeerAuthError,
} from './types.js';
export { registerTransportMetrics, type TransportStatsSource } from './transport-metrics.js';
