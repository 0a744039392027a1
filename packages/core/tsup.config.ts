import { packageConfig } from '../../tsup.base';

export default packageConfig({
  entry: {
    index: 'src/index.ts',
    'testing/index': 'src/testing/index.ts',
    'testing/v2': 'src/testing/v2.ts',
    'testing/matrix': 'src/testing/matrix.ts',
    'testing/fuzz': 'src/testing/fuzz.ts',
  },
  external: ['vitest', 'fast-check'],
});
