export { default } from '../../vitest.base';
