import { packageConfig } from '../../tsup.base';

export default packageConfig({ entry: { index: 'src/index.ts', testing: 'src/testing.ts' }, external: ['fast-check'] });
