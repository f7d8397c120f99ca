// ActorStore's public API (the Realm actor, objects, queries) arrives with the Realm actor issue.
// For now the module only re-exposes nothing; the engine lives in ActorStorePersistence.
import ActorStorePersistence
