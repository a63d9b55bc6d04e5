export * from '../../scripts/lib/etcd';
