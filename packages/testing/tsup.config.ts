import { packageConfig } from '../../tsup.base';

export default packageConfig({
  entry: { index: 'src/index.ts', v2: 'src/v2.ts', matrix: 'src/matrix.ts', fuzz: 'src/fuzz.ts' },
  external: ['vitest', 'fast-check'],
});
