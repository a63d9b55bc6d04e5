/**
 * Decorators of a package that is loaded only on first use.
 *
 * A stand-in takes the real decorator's arguments and remembers each application; `load()` requires
 * the package and replays every application, in the order it happened (order can matter: which
 * check answers first, which response description wins), with the real decorators. After that the
 * stand-ins apply the real ones at once.
 */
type AnyDecorator = (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => unknown;

export interface DeferredPackage<Package> {
  /** A stand-in for the package's decorator factory `name`, with its type. */
  decorator<Name extends keyof Package>(name: Name): Package[Name];
  /** The package itself, once every decorator applied so far has been replayed with it. */
  load(): Package;
}

export function deferredPackage<Package>(requirePackage: () => Package): DeferredPackage<Package> {
  const applications: { name: keyof Package; args: unknown[]; target: object; key?: string | symbol; descriptor?: PropertyDescriptor }[] = [];
  let loaded: Package | null = null;
  const real = (name: keyof Package, args: unknown[]) => (loaded![name] as (...args: unknown[]) => AnyDecorator)(...args);
  return {
    decorator<Name extends keyof Package>(name: Name): Package[Name] {
      const stand = (...args: unknown[]): AnyDecorator =>
        (target, key, descriptor) => {
          if (loaded) return real(name, args)(target, key, descriptor);
          applications.push({ name, args, target, key, descriptor });
          return descriptor;
        };
      return stand as unknown as Package[Name];
    },
    load(): Package {
      if (!loaded) {
        loaded = requirePackage();
        for (const { name, args, target, key, descriptor } of applications.splice(0)) real(name, args)(target, key, descriptor);
      }
      return loaded;
    },
  };
}
