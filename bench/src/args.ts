/** The command line of `pnpm bench` (its options are listed in main.ts). */
import { join, resolve } from 'node:path';
import { HTTP_ROWS } from './instructions-http.js';
import { INSTRUCTION_STACKS } from './stacks.js';

export const SECTIONS = [
  'overhead',
  'flood',
  'cancel',
  'mutex',
  'heartbeat',
  'memory',
  'scaling',
  'transport',
  'bullmq',
  'attack',
] as const;
export type Section = (typeof SECTIONS)[number];

/** The options of `argv`; `benchRoot` is where the default output folders are. */
export function parseArgs(argv: string[], benchRoot: string) {
  const args = {
    quick: false,
    heavy: false,
    only: [...SECTIONS] as Section[],
    out: '',
    cpuProf: false,
    instructions: false,
    http: false,
    keep: false,
    nativeOnly: false,
    rows: Object.keys(HTTP_ROWS),
    tools: [11] as number[],
    reps: 3,
    n: 2000,
    warmup: undefined as number | undefined,
    stacks: Object.keys(INSTRUCTION_STACKS),
    nodes: undefined as string[] | undefined,
    spread: undefined as string[] | undefined,
    jobs: undefined as number | undefined,
  };
  const int = (v: string | undefined, what: string) => {
    const x = Number(v);
    if (!Number.isInteger(x) || x < 1) throw new Error(`${what} needs a positive integer, got ${v}`);
    return x;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') args.quick = true;
    else if (a === '--cpu-prof') args.cpuProf = true;
    else if (a === '--heavy') args.heavy = true;
    else if (a === '--instructions') args.instructions = true;
    else if (a === '--http') args.http = true;
    else if (a === '--keep') args.keep = true;
    else if (a === '--native') args.nativeOnly = true;
    else if (a === '--tools') args.tools = (argv[++i] ?? '').split(',').map((t) => int(t, '--tools'));
    else if (a === '--rows') {
      args.rows = (argv[++i] ?? '').split(',').filter(Boolean);
      for (const r of args.rows)
        if (!(r in HTTP_ROWS)) throw new Error(`--rows: unknown row ${r}; one of ${Object.keys(HTTP_ROWS).join(', ')}`);
    } else if (a === '--reps') args.reps = int(argv[++i], '--reps');
    else if (a === '--n') args.n = int(argv[++i], '--n');
    else if (a === '--warmup') args.warmup = int(argv[++i], '--warmup');
    else if (a === '--jobs') args.jobs = int(argv[++i], '--jobs');
    else if (a === '--nodes') args.nodes = (argv[++i] ?? '').split(',').filter(Boolean);
    else if (a === '--spread') args.spread = (argv[++i] ?? '').split(',').filter(Boolean);
    else if (a === '--stacks') {
      const list = (argv[++i] ?? '').split(',').filter(Boolean);
      for (const s of list)
        if (!(s in INSTRUCTION_STACKS))
          throw new Error(`--stacks: unknown stack ${s}; one of ${Object.keys(INSTRUCTION_STACKS).join(', ')}`);
      args.stacks = list;
    } else if (a === '--only') {
      const list = (argv[++i] ?? '').split(',').filter(Boolean);
      for (const s of list)
        if (!(SECTIONS as readonly string[]).includes(s))
          throw new Error(`--only: unknown section ${s}; one of ${SECTIONS.join(', ')}`);
      args.only = list as Section[];
    } else if (a === '--out') args.out = resolve(argv[++i] ?? '');
    else if (a === '--') continue;
    else throw new Error(`unknown option ${a}`);
  }
  // A quick run never overwrites the full run's results.
  args.out ||= join(
    benchRoot,
    'results',
    args.instructions ? (args.http ? 'instructions-http' : 'instructions') : args.quick ? 'quick' : '',
  );
  return args;
}
