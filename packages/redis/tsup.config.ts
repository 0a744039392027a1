import { packageConfig } from '../../tsup.base';

export default packageConfig({
  entry: { index: 'src/index.ts', jobs: 'src/jobs.ts', ratelimit: 'src/ratelimit.ts', testing: 'src/testing.ts' },
  external: ['ioredis'],
});
