/**
 * Every limit in etcetera, in one place, with etcd's defaults where etcd has one. Units are last in names.
 * Relations between limits are asserted at load time below.
 */
import { assert } from './assert.js';

/** etcd: --max-request-bytes default 1.5 MiB. */
export const requestBytesMax = 1.5 * 1024 * 1024;
/**
 * The background key index checkpoint (main/index-checkpoint-keeper.ts): looked at this often, and written
 * only when a start would otherwise scan at least this many backend bytes and at least this many times the
 * last checkpoint's own size (a checkpoint costs about its size to write and to read; it must save more).
 * At rest nothing is written: the bytes a start would scan do not grow.
 */
export const indexCheckpointCheckIntervalMs = 2000;
export const indexCheckpointScanBytesMin = 16 * 1024 * 1024;
export const indexCheckpointSavingFactor = 2;
/** etcd: warnApplyDuration. An apply that takes longer counts in etcd_server_slow_apply_total and is logged. */
export const slowApplyMs = 100;
/**
 * Deadlines on one timer (base/lapsing-deadlines.ts): the list is compacted once more finished entries than
 * this are listed and they outnumber the live ones, and its dropped prefix once longer than this and most of
 * the array. Small enough to bound memory, large enough that compaction is rare per entry.
 */
export const deadlinesFinishedListedMin = 64;
/** etcd: --max-txn-ops default 128. */
export const txnOpsMax = 128;
/** etcd: maxGapBetweenApplyAndCommitIndex; past it, "etcdserver: too many requests". */
export const applyLagEntriesMax = 5000;
/** etcd: DefaultQuotaBytes = 2 GiB. */
export const quotaBackendBytesDefault = 2 * 1024 * 1024 * 1024;
/** etcd: MaxQuotaBytes = 8 GiB (a larger quota is clamped with a warning). */
export const quotaBackendBytesMax = 8 * 1024 * 1024 * 1024;
/** etcd: MaxLeaseTTL = 9,000,000,000 seconds. */
export const leaseTtlSecondsMax = 9_000_000_000;
/** etcd: minimum lease TTL is 3 * heartbeat... in practice 2 election timeouts ceil'd; we use etcd's formula at runtime. */
export const leaseMinTtlSecondsFloor = 1;
/**
 * Applied entries between snapshots. etcd 3.5 defaults to 100,000; we default to 10,000 (k3s runs etcd with
 * the same), because the Raft log behind the last snapshot stays in memory: on a 512 MiB board 100,000
 * entries of 1 KB are a fifth of the machine.
 */
export const snapshotCountDefault = 10_000;
/**
 * The Raft log is held in memory from the last snapshot on, so a snapshot is also due once this many entry
 * bytes were applied since the last one (large txns would otherwise keep unbounded log in memory). A
 * snapshot is only an fsync of the backend (the backend is the snapshot), so it can be frequent.
 */
export const raftLogBytesMax = 16 * 1024 * 1024;
/** Entry bytes (about) kept behind a snapshot for followers that are slightly behind. */
export const catchUpBytesMax = 4 * 1024 * 1024;
/** etcd: DefaultSnapshotCatchUpEntries; entries kept behind a snapshot for slow followers. */
export const snapshotCatchUpEntries = 5_000;
/**
 * Our own HTTP/2 server (src/api/h2frames). A client's header block (HEADERS + CONTINUATION, compressed) and
 * its decoded header list are each bounded by this (advertised as SETTINGS_MAX_HEADER_LIST_SIZE): an etcd
 * request's headers are a few hundred bytes (a JWT token is the largest), and nobody who has not proven who
 * they are gets more than a few KiB of our memory.
 */
export const h2HeaderListBytesMax = 16 * 1024;
/**
 * A client connection must finish HTTP/2's handshake (its preface and first SETTINGS) this soon after it was
 * handed to the gRPC server, or it is closed: grpc-go's server (etcd's) closes one that does not within its
 * ConnectionTimeout (120 s); ours is shorter, as the client port drops a silent connection after 10 s
 * (server.ts firstBytesMs) and a real client sends both at once.
 */
export const h2HandshakeMs = 20_000;
/** The receive window of a whole connection (streams keep HTTP/2's default 65,535): 16 streams' worth. */
export const h2ConnectionWindowBytes = 1024 * 1024;
/** Response data is held back (calls' write() answers false) while the socket buffers this much. */
export const h2SocketBufferedBytesHigh = 64 * 1024;
/**
 * A connection whose socket buffers this much when we must answer a control frame (a PING, a SETTINGS)
 * is a client that sends and does not read: it is cut (nghttp2's outbound-ack limit in bytes).
 */
export const h2ControlBufferedBytesMax = 1024 * 1024;
/**
 * Rapid reset (CVE-2023-44487; h2frames/flood-guard.ts): streams are counted in epochs of h2ResetEpochStreams
 * opened, and a connection whose client reset (before our answer), or we refused, more than h2ResetStreamsMax
 * of the streams of this epoch and the last is cut with GOAWAY ENHANCE_YOUR_CALM. Sustained, that is more than
 * 3 in 4 streams reset; a burst of 750 passes (a busy client whose every call hits its deadline at once when
 * the leader is lost); a client cancelling 1 call in 4 at random is far below it. nghttp2 allows a burst of
 * 1000 resets, then 33 a second; Node cuts at 100 rejected streams for a whole session.
 */
export const h2ResetEpochStreams = 500;
export const h2ResetStreamsMax = 750;
/**
 * Frames that do no work (empty DATA, PRIORITY, unknown types, empty CONTINUATION, frames for streams that are
 * gone, repeated SETTINGS, GOAWAY, unsolicited PING acks; h2frames/flood-guard.ts): a connection may send
 * h2IdleFramesMax of them (Node's maxSessionInvalidFrames default), and each stream opened or answered gives
 * h2IdleFramesRefund back. A well-behaved client sends at most a few per stream (a WINDOW_UPDATE or a
 * RST_STREAM racing our answer, DATA in flight when we answer before its half-close: 4 frames of 16 KiB in
 * its 64 KiB window), and a connection's preface one or two.
 */
export const h2IdleFramesMax = 1000;
export const h2IdleFramesRefund = 8;
/** etcd's grpcOverheadBytes: the gRPC message limit is the request limit plus this. */
export const grpcOverheadBytes = 512 * 1024;
/** gRPC message size etcd accepts: request limit plus slack for framing (grpc overhead). */
export const grpcMessageBytesMax = requestBytesMax + grpcOverheadBytes;
/**
 * Largest gRPC request a witness reads (witness-grpc.ts): it answers only Range (refused), Status and Alarm,
 * whose requests are a few bytes; a bigger one is refused RESOURCE_EXHAUSTED before it takes memory.
 */
export const witnessGrpcRequestBytesMax = 64 * 1024;
/**
 * How often a witness asks a data member for the member list: it skips the normal entries that change peer
 * URLs (main/witness-factory.ts), so it learns them this way.
 */
export const witnessMembersRefreshMs = 10_000;
/** Raft: bytes of entries in one MsgApp (etcd: MaxSizePerMsg 1 MiB). */
export const raftMsgBytesMax = 1024 * 1024;
/**
 * Joining (`--server`): how long a new member keeps asking before it gives up with a clear error (at least
 * this, or 10 election timeouts), the timeout of one attempt, and the join challenges a member holds open.
 */
export const joinRetryMsMin = 15_000;
export const joinAttemptTimeoutMs = 3_000;
export const joinChallengesMax = 256;
export const joinChallengeTtlMs = 30_000;
/**
 * WAL segment sizes: a new log's first segment is this small (zero-filled while the member starts; the
 * profile's size follows, prepared in the background), and a segment never takes more than half the free
 * space, halving from the profile's size down to walSegmentBytesMin.
 */
export const walFirstSegmentBytes = 1024 * 1024;
export const walSegmentBytesMin = 1024 * 1024;
/**
 * `--storage-profile auto` keeps calibrating while it runs (wal/profile-calibration.ts): it watches the
 * fdatasyncs of small batches only (a big batch's longer sync says nothing about the device's latency), in
 * windows of this many syncs, and switches profile once that many consecutive windows' medians classify
 * away from it (one odd window, a busy minute, never switches), each past the profile's latency threshold
 * by this ratio (a disk whose median sits near 2 ms does not flap between ssd and emmc).
 */
export const walCalibrationBatchBytesMax = 16 * 1024;
export const walCalibrationWindowSyncs = 256;
export const walCalibrationWindowsToSwitch = 2;
export const walCalibrationMarginRatio = 1.25;
/** Raft: MsgApp in flight per follower (etcd: MaxInflightMsgs 4096 / 512 in etcdserver). */
export const raftInflightMsgsMax = 512;
/** Raft: uncommitted entry bytes the leader accepts before dropping proposals (etcd uses 1 GiB by default). */
export const raftUncommittedBytesMax = 64 * 1024 * 1024;
/** Watch: events per response before a revision may be fragmented (only with fragment=true). */
export const watchResponseBytesMax = requestBytesMax;
/** Watch: queued responses per watcher before it becomes a victim (slow) and stops being fed live. */
export const watchQueueResponsesMax = 1024;
/** etcd: watchResyncPeriod (mvcc syncWatchersLoop). Every this often, watchers still catching up get more history. */
export const watchResyncIntervalMs = 100;
/**
 * Applied state not yet written to the backend (write buffer plus queued flush batches, as memory) past which
 * apply waits for the backend, until half of it is written (src/node/apply/apply-loop.ts applyHold). A 20 ms
 * flush at 20,000 puts/s of 256 B holds about 8 MiB with its ops, so only a backend that falls behind meets it.
 */
export const backendBacklogBytesMax = 32 * 1024 * 1024;
/** Pending proposals per server before "too many requests". */
export const pendingProposalsMax = 10_000;

assert(grpcMessageBytesMax > requestBytesMax, 'gRPC message limit must exceed the request limit');
assert(h2ResetStreamsMax > h2ResetEpochStreams && h2ResetStreamsMax < 2 * h2ResetEpochStreams, 'a rapid reset is cut within two epochs, a first epoch of resets alone is not');
assert(h2IdleFramesRefund >= 4 && h2IdleFramesRefund < h2IdleFramesMax, 'a stream pays for the idle frames a well-behaved client sends with it');
assert(backendBacklogBytesMax > 2 * requestBytesMax, 'one largest request must fit in the backend backlog');
assert(raftMsgBytesMax >= 64 * 1024, 'raft message size too small to carry one request');

/** Peer transport: messages queued per peer before new ones are dropped and the peer reported unreachable (etcd: streamBufSize 4096). */
export const peerQueueMessagesMax = 4096;
/** Peer transport: bytes of messages queued per peer before dropping (bounds memory when a peer is slow). */
export const peerQueueBytesMax = 64 * 1024 * 1024;
/** Peer transport: a batch frame is closed once its messages reach this many bytes (estimated). */
export const peerBatchBytesMax = 1024 * 1024;
/** Peer transport: bytes the socket may buffer unsent before we stop writing and let the queue absorb. */
export const peerSocketBufferedBytesMax = 4 * 1024 * 1024;
/** Peer transport: largest frame accepted on the wire; a longer length prefix is a protocol error. */
export const peerFrameBytesMax = 16 * 1024 * 1024;
/**
 * Peer transport, before a connection's handshake has succeeded: the largest frame accepted (Hello, Auth,
 * Welcome and Refused are a few hundred bytes), and the bytes it may have buffered unread. Whoever has not
 * proven they know the join token gets this much memory and no decoding of anything larger; etcd answers a
 * 300 MB POST to /raft from an unknown sender with 412 and its memory does not move.
 */
export const peerHandshakeFrameBytesMax = 4 * 1024;
export const peerHandshakeBufferedBytesMax = 2 * peerHandshakeFrameBytesMax;
/**
 * Peer transport, after the handshake: bytes of a connection buffered while no handler takes them (between a
 * request and the next) before its socket is paused; the next handler resumes it.
 */
export const peerUnreadBytesMax = peerFrameBytesMax;
/** Peer transport: a refused connection is destroyed once its Refused frame is flushed, or after this. */
export const peerRefusalFlushMs = 1_000;
/** A peer that stays unreachable is logged again this often (etcd's prober reports an unhealthy peer every 30 s). */
export const peerDownLogIntervalMs = 30_000;
/** Peer transport: snapshot data is streamed in chunks of this size on its own connection. */
export const snapshotChunkBytes = 1024 * 1024;
/**
 * Peer transport: received snapshot bytes allowed to wait for the disk (a disk slower than the link); past
 * this the socket is paused until the writes catch up, so a receive holds a few chunks, never the snapshot.
 */
export const snapshotReceiveQueuedBytesMax = 8 * snapshotChunkBytes;
/**
 * After a snapshot from the leader was refused for room on the disk (node/request/disk-room.ts), this many of
 * the leader's next sends are refused at their first chunk before one is received in full again: the leader
 * resends after each heartbeat, and each full try wrote up to a third of the free space before its refusal
 * (≈ 10 s between full tries at the default 100 ms heartbeat; issue 32, --fill-faults seed 2).
 */
export const snapshotRefusalsAtOnceMax = 100;

assert(peerHandshakeFrameBytesMax >= 1024 && peerHandshakeFrameBytesMax * 64 <= peerFrameBytesMax, 'handshake frames are small, data frames large');
assert(peerFrameBytesMax >= 2 * Math.max(peerBatchBytesMax, snapshotChunkBytes, requestBytesMax), 'peer frame limit too small');
/** WAL: bytes of entries packed into one log record (a bigger single entry gets a record of its own). */
export const walRecordChunkBytes = 1024 * 1024;
/** WAL: largest record payload accepted on read or write; a longer length field is corruption (etcd #14098). */
export const walRecordBytesMax = 16 * 1024 * 1024;

assert(walRecordBytesMax >= walRecordChunkBytes + 2 * requestBytesMax, 'a WAL record must hold a chunk plus one request');
/** MVCC: revisions deleted per backend batch during physical compaction (etcd: compaction-batch-limit 1000). */
export const compactionBatchKeysMax = 1000;
/**
 * MVCC: after a compaction, the store rewrites LevelDB's tables in the background (a reclaim) once it is over
 * this fraction of the quota and the revisions dropped since the last reclaim are at least
 * reclaimGarbageFraction of those kept. bbolt reuses freed pages at once, so etcd's db size stays near its
 * live data; LevelDB keeps deleted data until it compacts the tables holding it. Without this, a store that
 * rewrites compacted keys floats at the quota, where the etcdBackendQuotaLowSpace alert (95%) fires.
 */
export const reclaimAtQuotaFraction = 0.5;
/** MVCC: see reclaimAtQuotaFraction; it bounds the rewrite cost on a large live data set (SD-card wear). */
export const reclaimGarbageFraction = 0.25;
/** Peer transport: inbound connections (authenticated or not) held at once; more are closed on accept. */
export const peerInboundConnectionsMax = 1024;
/**
 * A prober's connection stays open between probes (as etcd's prober reuses its HTTP connection): dialling and
 * authenticating a fresh one for every probe cost ~2 ms of CPU, about 1 ms/s per member at rest. The answering
 * side closes one left idle this long (three probe intervals).
 */
export const peerProbeConnectionIdleMs = 12_000;
/**
 * TLS: a CRL file (--client-crl-file, --peer-crl-file) is looked at (stat) at most this often, and read again
 * only when it changed. etcd reads and parses it for every accepted connection; an update still takes effect
 * without a restart, within this delay, and a flood of connections no longer reads the file per accept.
 */
export const crlStatIntervalMs = 1_000;
/**
 * MVCC: bytes of decoded values kept in memory for reads (a hot-value cache; everything else is read from
 * LevelDB). Small by default: the block cache and the OS page cache already hold hot data, and a 1 GiB board
 * runs a Kubernetes server beside us.
 */
export const valueCacheBytesDefault = 8 * 1024 * 1024;
/** MVCC: a change's sub-revision must fit the in-memory revision code (see src/mvcc/rev-code.ts). */
export const subRevisionsMax = 32_768;
assert(subRevisionsMax > txnOpsMax, 'a txn of txnOpsMax puts must fit the sub-revision range');
/**
 * The largest --max-request-bytes we accept: a request (and a txn of them) must fit one WAL record and one
 * peer frame with room to spare, which etcd's unbounded flag cannot promise here.
 */
export const requestBytesLimitMax = 7 * 1024 * 1024;
assert(walRecordBytesMax >= walRecordChunkBytes + 2 * requestBytesLimitMax, 'a WAL record must hold a chunk plus one largest request');
assert(peerFrameBytesMax >= 2 * requestBytesLimitMax, 'a peer frame must hold the largest request twice');
/**
 * HTTP gateway: bytes of JSON accepted for one unary request (base64 makes bytes 4/3 larger; a request the gRPC
 * limit would refuse is refused here, bigger ones before they are buffered), and for one message of a stream.
 */
export const gatewayJsonBytesMax = Math.ceil((grpcMessageBytesMax * 4) / 3) + 64 * 1024;
/**
 * HTTP gateway: nesting of `{` and `[` in a request's JSON (Go's encoding/json maxNestingDepth, which etcd's
 * gateway inherits: past it, 400 "invalid character '[' exceeded max depth").
 */
export const gatewayJsonNestingMax = 10_000;
/**
 * Protobuf: message nesting protobufjs decodes and encodes (its default is 100). Only a Txn nests (TxnRequest →
 * RequestOp → TxnRequest, two levels per txn), and etcd decodes any depth, then refuses more than its op budget
 * allows (--max-txn-ops + 1 levels) with "too many operations in txn request"; so must we, answering that for a
 * txn deeper than this instead of failing to decode it. 1024 keeps the recursive decoder far from the JS stack
 * limit (about 8,000 levels) and covers --max-txn-ops up to ~500.
 */
export const protobufDepthMax = 1024;
assert(protobufDepthMax >= 2 * (txnOpsMax + 2) + 4, 'a txn nested as deep as the default op budget allows must decode');
/**
 * Scheduled snapshots: the longest single wait of the scheduler's timer. A yearly spec waits in steps (timers
 * cannot wait 2^31 ms or more), and a jump of the wall clock is noticed within this bound.
 */
export const scheduledSnapshotWakeMsMax = 60 * 60 * 1000;
/**
 * Off-site snapshots (--etcd-s3): the part size of a multipart upload, and the largest object sent in one PUT.
 * S3's smallest allowed part (except the last) is 5 MiB; one part is all an upload holds in memory, so a 1 GB
 * snapshot uploads in ~200 parts with a bounded footprint (S3 allows 10,000 parts: 50 GB).
 */
export const s3PartBytes = 5 * 1024 * 1024;
/** S3's cap on the parts of one multipart upload. */
export const s3PartsMax = 10_000;
/** A failed upload is tried again this many times in all (k3s tries once), waiting s3RetryDelayMs × 2^n, at most s3RetryDelayMsMax. */
export const s3UploadAttemptsMax = 5;
export const s3RetryDelayMs = 1_000;
export const s3RetryDelayMsMax = 60_000;
/** k3s's --etcd-s3-timeout default (5m0s): the longest one bucket operation may take. */
export const s3TimeoutMsDefault = 5 * 60 * 1000;
/** Cluster reset: how long k3s's --cluster-reset waits for the reset to be applied before giving up. */
export const clusterResetApplyMsMax = 60_000;

/** Simple auth tokens kept per member; past it the least recently used goes (etcd has no cap; a login storm must not grow memory). */
export const simpleTokensMax = 100_000;
/** Authenticate retries when the auth revision moved between the password check and apply (etcd loops unbounded). */
export const authenticateAttemptsMax = 8;
/** etcd's default bcrypt cost (bcrypt.DefaultCost); --bcrypt-cost may choose 4..31. */
export const bcryptCostDefault = 10;
/**
 * Password checks (Authenticate) run on libuv's thread pool, at most this many at once, and hashes
 * (UserAdd, UserChangePassword) at most passwordHashesMax beside them: the pool has 4 threads by default and
 * the WAL's and LevelDB's file work shares it, so neither guesses nor an admin's hashing ever take it all.
 */
export const passwordChecksMax = 2;
export const passwordHashesMax = 1;
/** Hashes waiting for a turn (only admins reach hashing); past it, "etcdserver: too many requests". */
export const passwordHashesQueuedMax = 16;
/**
 * Password checks waiting for bcrypt, per tier (sources with fewer than passwordFailuresFree failures first,
 * then sources past them, see password-checks.ts), and per source: one source runs one check at a time, so
 * a thousand connections from one address hold at most this many places. Past either, a check is refused
 * unchecked: "etcdserver: too many requests", answered no sooner than passwordBackoffMsMin.
 */
export const passwordChecksQueuedMax = 64;
export const passwordChecksQueuedPerSourceMax = 4;
/**
 * Past passwordFailuresFree wrong passwords in a row from one source (a client address; an IPv6 /64), the
 * source's next check waits passwordBackoffMsMin, doubling per further failure up to the max, and is then
 * checked. Its checks wait in its own queue, so a source guessing fast gets about one bcrypt run per wait
 * and takes nothing from other sources. A bcrypt-verified right password clears it. The free failures keep
 * etcd's answers for a client that mistypes and retries at once.
 */
export const passwordFailuresFree = 3;
export const passwordBackoffMsMin = 250;
export const passwordBackoffMsMax = 8_000;
/**
 * Refusals held until their source's backoff ends (or passwordBackoffMsMin); past it they are answered at
 * once (each holds a timer). Answered at once, 50 callers that each send the next guess on the answer made
 * thousands of calls a second and tripled the put p99 of a 3-member cluster (issue 20).
 */
export const passwordRefusalsHeldMax = 4096;
/** Sources with failures remembered; the oldest is forgotten past it (addresses are many). */
export const passwordBackoffSourcesMax = 10_000;
/** Users whose last verified password is remembered (one HMAC each), least recently used forgotten first. */
export const passwordKnownGoodMax = 10_000;
/** etcd's --auth-token-ttl default, seconds. */
export const authTokenTtlSecondsDefault = 300;
/**
 * --storage-endurance-tbw's default, terabytes: what an ordinary 32 GB SD card (a Raspberry Pi's) can be
 * expected to take. Endurance cards publish ratings as hours of Full HD video at 26 Mbit/s (11.7 GB an hour):
 * Samsung PRO Endurance (2018) 32 GB, 17,520 h ≈ 205 TB; SanDisk High Endurance 128 GB, 10,000 h ≈ 117 TB,
 * so ≈ 29 TB at 32 GB. Ordinary cards publish nothing; Samsung states its endurance line takes 25× what its
 * speed-focused cards take: 205 / 25 ≈ 8 TB, for sequential video. Small synced writes (one page per fsync)
 * wear flash harder than video, so half of it. Conservative on purpose: set your card's or SSD's rating.
 */
export const storageEnduranceTbwDefault = 4;
/**
 * --storage-life-warning-years' default: below this projected card life the member logs a warning and
 * raises etcetera_disk_life_warning. A k3s server at rest (≈ 34 KB/s per member, README "Benchmarks") gives
 * a 4 TBW card ≈ 3.7 years: at rest it does not warn; twice that rate does.
 */
export const storageLifeWarningYearsDefault = 3;

/**
 * A peer failure that repeats while its cause lasts is logged once per this interval (per peer and kind), with
 * the count of repeats not logged: a follower whose disk cannot take a snapshot refuses every try, and the
 * leader tries again about ten times a second, which logged twenty lines a second across the two members,
 * onto the very card that is full.
 */
export const peerRepeatedWarningIntervalMs = 10_000;
