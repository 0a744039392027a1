#!/usr/bin/env node
/**
 * tether-demo: the demo server.
 *
 *   tether-demo                 Streamable HTTP on 127.0.0.1:$PORT (default 3000)
 *   tether-demo --port 8080     Streamable HTTP on 127.0.0.1:8080 (0 = any free port)
 *   tether-demo --stdio         stdio (for MCP hosts that spawn servers)
 *   tether-demo --conformance   also serve the conformance suite's fixtures (test_* tools)
 *   tether-demo --redis URL     shared stores on Redis (also REDIS_URL): run several replicas as one server;
 *                               jobs (corpus.reindex) run on BullMQ workers, by default in every replica
 *   tether-demo --redis URL --worker      a worker only: runs jobs, serves no HTTP
 *   tether-demo --redis URL --no-worker   HTTP only: runs no jobs
 *
 * Diagnostics go to stderr; on HTTP the first stdout line is `tether-demo listening on <url>`.
 */
import { parseArgs } from 'node:util';
import { bullmqExecutor, type BullmqWorker } from '@mcp-tether/bullmq';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { startHttp } from './http.js';
import { startTelemetry } from './telemetry.js';
import { redisStores } from './redis.js';
import { createDemoApp } from './server.js';

const USAGE = `usage: tether-demo [--port N | --stdio] [--host 127.0.0.1|localhost|::1]

  --port N   serve Streamable HTTP at http://127.0.0.1:N/mcp (default: $PORT or 3000; 0 = free port)
  --stdio    serve over stdin/stdout
  --host H   loopback address to bind (default 127.0.0.1)
  --inline-ms N  corpus.reindex runs inline this long before it answers with a job handle (default 20000)
  --redis U  put locks, jobs, one-time requestState and counters on Redis at U (default: $REDIS_URL;
             without either, everything lives in this process). Replicas share MRTR_KEYS too.
             Jobs then run on BullMQ workers: a worker whose process dies loses its jobs to another
             worker within about 1.5 x JOB_LEASE_MS (default 30000 ms), which resumes them.
  --worker     (with --redis) run jobs only: serve no HTTP
  --no-worker  (with --redis) serve HTTP only: run no jobs
  --metrics-port N  serve Prometheus metrics at http://127.0.0.1:N/metrics (0 = free port); traces go
             over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set (standard OTEL_* variables)
  --quiet    no banner, no session log
  --conformance  also register the conformance suite's fixtures (test_* tools, one prompt)
  --help     this text`;

const DRAIN_MS = 5_000;

async function main(): Promise<void> {
  const parse = () => {
    try {
      return parseArgs({
        options: {
          port: { type: 'string' },
          stdio: { type: 'boolean', default: false },
          host: { type: 'string', default: '127.0.0.1' },
          redis: { type: 'string' },
          quiet: { type: 'boolean', default: false },
          'inline-ms': { type: 'string' },
          'metrics-port': { type: 'string' },
          conformance: { type: 'boolean', default: false },
          worker: { type: 'boolean', default: false },
          'no-worker': { type: 'boolean', default: false },
          help: { type: 'boolean', default: false },
        },
        strict: true,
      });
    } catch (err) {
      console.error(`${(err as Error).message}\n\n${USAGE}`);
      return process.exit(2);
    }
  };
  const { values } = parse();
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (values.stdio && values.port !== undefined) {
    console.error(`--stdio and --port exclude each other\n\n${USAGE}`);
    process.exit(2);
  }
  const host = values.host;
  if (host !== '127.0.0.1' && host !== 'localhost' && host !== '::1') {
    console.error(`--host must be a loopback address (127.0.0.1, localhost or ::1), got ${host}`);
    process.exit(2);
  }

  const inlineText = values['inline-ms'];
  if (inlineText !== undefined && !/^\d{1,9}$/.test(inlineText)) {
    console.error(`--inline-ms must be a whole number of ms, got ${JSON.stringify(inlineText)}\n\n${USAGE}`);
    process.exit(2);
  }
  const metricsText = values['metrics-port'];
  if (metricsText !== undefined && (!/^\d{1,5}$/.test(metricsText) || Number(metricsText) > 65_535)) {
    console.error(`--metrics-port must be a port number, got ${JSON.stringify(metricsText)}\n\n${USAGE}`);
    process.exit(2);
  }
  // Before the servers are built: otel() in the stack finds the SDK (it costs next to nothing without one).
  const telemetry = await startTelemetry({
    host,
    ...(metricsText !== undefined && { metricsPort: Number(metricsText) }),
  }).catch((err: Error) => {
    console.error(`tether-demo: telemetry: ${err.message}`);
    process.exit(1);
  });
  if (telemetry?.metricsUrl) console.log(`tether-demo metrics on ${telemetry.metricsUrl}`);
  const redisUrl = values.redis ?? process.env.REDIS_URL;
  if ((values.worker || values['no-worker']) && !redisUrl) {
    console.error(`--worker and --no-worker need --redis URL (or REDIS_URL): workers take jobs from Redis\n\n${USAGE}`);
    process.exit(2);
  }
  if (values.worker && (values['no-worker'] || values.stdio || values.port !== undefined)) {
    console.error(`--worker serves no MCP: it excludes --no-worker, --stdio and --port\n\n${USAGE}`);
    process.exit(2);
  }
  const shared = redisUrl ? redisStores(redisUrl) : undefined;
  // With Redis, job handlers run on BullMQ workers (any process started without --no-worker).
  let executor: ReturnType<typeof bullmqExecutor> | undefined;
  if (redisUrl) {
    try {
      executor = bullmqExecutor({ connection: redisUrl, prefix: 'tether:bull', onError: (e) => logError(e) });
    } catch (err) {
      console.error(`tether-demo: ${(err as Error).message}`);
      process.exit(2);
    }
  }
  const logError = (e: unknown) => {
    if (!values.quiet) console.error(`tether-demo: ${e instanceof Error ? e.message : String(e)}`);
  };
  if (shared && !values.quiet && !process.env.MRTR_KEYS)
    console.error(
      'tether-demo: --redis without MRTR_KEYS: 2026-07-28 input_required retries only verify on the replica that sealed them',
    );
  const maxQueue = process.env.DEMO_MAX_QUEUE === undefined ? undefined : Number(process.env.DEMO_MAX_QUEUE);
  // 2026-07-28 listeners (subscriptions/listen) hear of new job output through the HTTP front, made below.
  let listening: Awaited<ReturnType<typeof startHttp>> | undefined;
  const app = createDemoApp({
    conformanceFixtures: values.conformance,
    notifyResourceUpdated: (uri) => listening?.front.notify.resourceUpdated(uri),
    ...(inlineText !== undefined && { inlineMs: Number(inlineText) }),
    ...(shared && {
      lockStore: shared.lockStore,
      replayStore: shared.replayStore,
      jobStore: shared.jobStore,
      records: shared.records,
      executor,
    }),
    ...(maxQueue !== undefined && { maxQueue }),
  });
  let closing = false;
  let closingAt = 0;
  // One Ctrl+C can arrive twice: `npm run dev` signals the whole process group and tsx relays the
  // signal to this process as well. A repeat within REPEAT_MS is that same interrupt; a later one
  // means "leave now".
  const REPEAT_MS = 500;
  const secondSignal = (): boolean => {
    if (!closing) {
      closing = true;
      closingAt = Date.now();
      return false;
    }
    if (Date.now() - closingAt >= REPEAT_MS) process.exit(130);
    return true;
  };
  /**
   * The jobs engine's shutdown: no new jobs, running ones finish within DRAIN_MS, the rest end
   * `cancelled` (statusMessage `shutdown: …`) in the job store before it resolves: a replica on
   * Redis leaves no job `working` for the others to wait on. The shared stores are closed after.
   */
  const closeJobs = () => app.stack.jobs.engine.close({ graceMs: DRAIN_MS, closeStore: false }).catch(() => undefined);
  /** stdio: drain the stack (running calls abort with ShuttingDown), then close. */
  const shutdown = (close: () => Promise<void>) => async (signal: string) => {
    if (secondSignal()) return; // the same interrupt relayed (a later second signal exits)
    if (!values.quiet) console.error(`tether-demo: ${signal}, draining calls (at most ${DRAIN_MS} ms)...`);
    const force = setTimeout(() => process.exit(1), DRAIN_MS + 2_000);
    force.unref();
    await stopWorker(DRAIN_MS);
    // Jobs get the same grace as the calls; those still running then end `cancelled` (shutdown),
    // written to the store before the process exits.
    const [drained] = await Promise.all([app.stack.drain(DRAIN_MS).catch(() => undefined), closeJobs()]);
    if (drained && !values.quiet && (drained.aborted || drained.pending)) {
      console.error(`tether-demo: ${drained.aborted} call(s) aborted, ${drained.pending} still running at exit`);
    }
    await close().catch(() => {});
    await shared?.close().catch(() => {});
    await telemetry?.shutdown().catch(() => {});
    process.exit(0);
  };

  /** Take jobs in this process (with --redis, unless --no-worker); logs each run it takes. */
  let worker: BullmqWorker | undefined;
  const startWorker = async () => {
    if (!executor || values['no-worker']) return;
    worker = await executor.startWorker({ server: () => app.createServer(), engine: app.stack.jobs.engine });
    if (!values.quiet)
      worker.worker.on('active', (job) =>
        console.error(
          `tether-demo: pid ${process.pid} runs job ${job.id} (${job.name}), attempt ${job.attemptsStarted}`,
        ),
      );
  };
  /** Stop taking jobs; running ones get `graceMs`, then go back to the queue for another worker. */
  const stopWorker = async (graceMs: number) => {
    await worker?.close(graceMs).catch(() => {});
    await executor?.close({ graceMs: 0 }).catch(() => {});
  };

  if (values.worker) {
    await startWorker();
    console.log(
      `tether-demo worker ${process.pid} taking jobs from Redis at ${redisUrl} (lock ${executor!.settings.lockMs} ms)`,
    );
    const stop = async (signal: string) => {
      if (secondSignal()) return;
      if (!values.quiet)
        console.error(`tether-demo: ${signal}, finishing jobs (at most ${DRAIN_MS} ms), then handing the rest back...`);
      const force = setTimeout(() => process.exit(1), DRAIN_MS + 5_000);
      force.unref();
      await stopWorker(DRAIN_MS);
      await shared?.close().catch(() => {});
      process.exit(0);
    };
    process.on('SIGINT', () => void stop('SIGINT'));
    process.on('SIGTERM', () => void stop('SIGTERM'));
    return;
  }

  if (values.stdio) {
    const server = app.createServer();
    await server.connect(new StdioServerTransport());
    const stop = shutdown(() => server.close());
    process.on('SIGINT', () => void stop('SIGINT'));
    process.on('SIGTERM', () => void stop('SIGTERM'));
    process.stdin.on('end', () => void stop('stdin closed'));
    if (!values.quiet) console.error('tether-demo: serving MCP over stdio');
    await startWorker();
    return;
  }

  const portText = values.port ?? process.env.PORT ?? '3000';
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65_535) {
    console.error(`invalid port ${JSON.stringify(portText)}\n\n${USAGE}`);
    process.exit(2);
  }
  const http = await startHttp({
    port,
    host,
    createServer: app.createServer,
    createModernServer: app.createModernServer,
    // One scope per session (its id): a Last-Event-ID of another session's stream replays nothing.
    ...(shared && { eventStore: ({ sessionId }: { sessionId: string }) => shared.events.scoped(sessionId) as never }),
    log: values.quiet ? undefined : (line) => console.error(`tether-demo: ${line}`),
  }).catch((err: NodeJS.ErrnoException) => {
    console.error(
      err.code === 'EADDRINUSE'
        ? `tether-demo: port ${port} is in use (set PORT or --port)`
        : `tether-demo: ${err.message}`,
    );
    process.exit(1);
  });
  listening = http;
  await startWorker();
  const url = http.url.href;
  console.log(`tether-demo listening on ${url}`);
  if (!values.quiet) {
    const names = app.stack.names.length ? app.stack.names.join(' → ') : '(none yet)';
    console.log(
      [
        `  middlewares (outermost first): ${names}`,
        `  shared stores: ${shared ? `Redis at ${redisUrl} (locks, jobs, SSE events, one-time requestState, counters)` : 'this process only (--redis URL to share them between replicas)'}`,
        ...(executor
          ? [
              `  jobs: BullMQ queue on that Redis; ${worker ? `this process is also a worker (lock ${executor.settings.lockMs} ms)` : 'run by workers (tether-demo --worker); this process runs none'}`,
            ]
          : []),
        '  eras: 2025-era sessions (SDK v1, stateful) and 2026-07-28 requests (SDK v2, stateless), same URL',
        '',
        '  connect:',
        `    walkthrough client   npm run demo:client -- --url ${url}`,
        `    MCP Inspector (CLI)  npx -y @modelcontextprotocol/inspector --cli ${url} --transport http --method tools/list`,
        `    MCP Inspector (UI)   npx -y @modelcontextprotocol/inspector   (Transport: Streamable HTTP, URL: ${url})`,
        ...(values.conformance
          ? [`    conformance suite    npm run conformance -- --url ${url}`]
          : [
              '    conformance suite    npm run conformance   (starts its own server; to test this one, restart it with: npm run dev -- --conformance)',
            ]),
        '',
        '  Ctrl+C stops the server.',
      ].join('\n'),
    );
  }
  // HTTP: the front's graceful shutdown. New sessions and calls get 503 SHUTTING_DOWN, running calls
  // get DRAIN_MS to finish, the rest are answered with a SHUTTING_DOWN error and aborted.
  const stopHttp = async (signal: string) => {
    if (secondSignal()) return; // the same interrupt relayed (a later second signal exits)
    if (!values.quiet) console.error(`tether-demo: ${signal}, finishing calls (at most ${DRAIN_MS} ms)...`);
    const force = setTimeout(() => process.exit(1), DRAIN_MS + 2_000); // grace + at most 1 s for the last answers
    force.unref();
    const [r] = await Promise.all([
      http.shutdown(DRAIN_MS).catch(() => undefined),
      stopWorker(DRAIN_MS).then(closeJobs),
    ]);
    if (r && !values.quiet && (r.aborted || r.finished))
      console.error(`tether-demo: ${r.finished} call(s) finished, ${r.aborted} stopped at the end of the grace period`);
    await app.stack.drain(0).catch(() => undefined);
    await telemetry?.shutdown().catch(() => {});
    await shared?.close().catch(() => {});
    process.exit(0);
  };
  process.on('SIGINT', () => void stopHttp('SIGINT'));
  process.on('SIGTERM', () => void stopHttp('SIGTERM'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
