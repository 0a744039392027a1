import { jobStoreContract } from '../src/testing.js';
import { MemoryJobStore } from '../src/memory.js';

jobStoreContract(
  'MemoryJobStore (fake clock)',
  ({ now, retention }) => new MemoryJobStore({ now, sweepIntervalMs: 0, ...retention }),
);
jobStoreContract(
  'MemoryJobStore (real time, sweep timer)',
  ({ retention }) => new MemoryJobStore({ sweepIntervalMs: 50, ...retention }),
  {
    realTime: true,
  },
);
