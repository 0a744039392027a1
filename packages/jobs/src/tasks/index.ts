/**
 * MCP tasks for `@mcp-tether/jobs`: the 2025-11-25 task front (`params.task`) and the 2026-07-28
 * tasks-extension front (`io.modelcontextprotocol/tasks`), in one middleware.
 */
export { taskFront, type TaskFrontOptions, type TaskSupport } from './front.js';
export type { TaskEngine } from './port.js';
export {
  TASKS_EXTENSION,
  RELATED_TASK_META_KEY,
  MISSING_REQUIRED_CLIENT_CAPABILITY,
  createTaskResult2025,
  createTaskResult2026,
  detailedTask2026,
  task2025,
  task2026,
  status2025,
} from './wire.js';
