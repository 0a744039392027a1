import { packageConfig } from '../../tsup.base';

export default packageConfig({
  entry: { index: 'src/index.ts' },
  external: ['bullmq', 'ioredis'],
});
