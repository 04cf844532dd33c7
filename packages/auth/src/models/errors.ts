/** Thrown by model `get…` functions when the row does not exist. */
export class NotFoundError extends Error {
  /** What was looked up, for example `user`. */
  readonly what: string
  constructor(what: string, message = `${what} not found`) {
    super(message)
    this.name = 'NotFoundError'
    this.what = what
  }
}

/** {@link NotFoundError} for users. */
export class UserNotFoundError extends NotFoundError {
  constructor() {
    super('user', 'User not found')
    this.name = 'UserNotFoundError'
  }
}
