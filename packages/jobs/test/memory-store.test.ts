import { jobStoreContract } from '../src/testing.js';
import { MemoryJobStore } from '../src/memory.js';

jobStoreContract('MemoryJobStore (fake clock)', ({ now }) => new MemoryJobStore({ now, sweepIntervalMs: 0 }));
jobStoreContract('MemoryJobStore (real time, sweep timer)', () => new MemoryJobStore({ sweepIntervalMs: 50 }), {
  realTime: true,
});
