export * from './errors.ts';
export * from './ids.ts';
export * from './accounts/index.ts';
export * from './tasks/index.ts';
export * from './uploads/index.ts';
export * from './points/index.ts';
export * from './downloads/index.ts';
export * from './files/index.ts';
