export { PeerTransport, defaultTransportLimits } from './transport.js';
export { parsePeerUrl } from './connection.js';
export {
  type PeerRequest,
  type PeerRequestInfo,
  type PeerResponse,
  type PeerStats,
  type PeerTlsOptions,
  type PeerTransportLimits,
  type PeerTransportOptions,
  PeerAuthError,
} from './types.js';
export { registerTransportMetrics, type TransportStatsSource } from './metrics.js';
