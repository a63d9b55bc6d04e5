export * from './memory-network';
export * from './memory-postgres';
export * from './memory-postgres-process';
export * from './memory-postgres-query';
export * from './memory-state';
export * from './wal-history';
