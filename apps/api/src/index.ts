export { createApp, type ApiDeps } from './app.ts';
